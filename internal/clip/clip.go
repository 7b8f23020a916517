// Package clip shortens text for the places that refuse it over a size:
// condition messages, Event notes, commit status descriptions,
// notification bodies. It cuts at a rune boundary, so what it returns is
// valid UTF-8 whenever its input was.
package clip

import "unicode/utf8"

// Ellipsis ends a text that was cut.
const Ellipsis = "…"

// To returns s if it is at most n bytes long, else its longest prefix of
// whole runes that fits in n bytes with Ellipsis after it.
func To(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(Ellipsis)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + Ellipsis
}
