// Command child is a render child and nothing else, for tests: started
// with the sandbox's environment marker it serves one render (package
// sandbox's init does), otherwise it exits.
package main

import _ "gitsync.dev/gitsync/source/sandbox"

func main() {}
