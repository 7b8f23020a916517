package notify_test

import (
	"crypto/hmac"
	"fmt"

	"gitsync.dev/gitsync/notify"
)

// A receiver checks a webhook body against its X-Gitsync-Signature header
// with the key both sides hold, comparing in constant time.
func ExampleSign() {
	key := []byte("shared-key")
	body := []byte(`{"gitsync":{"namespace":"prod","name":"web"},"state":"Ready","time":"2026-12-04T03:04:05Z"}`)
	header := notify.Sign(key, body) // what gitsync sent

	ok := hmac.Equal([]byte(header), []byte(notify.Sign(key, body)))
	fmt.Println(header)
	fmt.Println(ok)
	// Output:
	// sha256=258af5ac4607ae80e94e787f2babc2f654432e274482e25bc50fba7c58f1a76b
	// true
}
