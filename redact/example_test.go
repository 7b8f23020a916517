package redact_test

import (
	"fmt"

	"gitsync.dev/gitsync/redact"
)

func ExampleRedactor() {
	r := redact.New()
	// A Secret's value substituted into a ConfigMap label; the apiserver
	// refuses it and quotes it back, escapes and all.
	r.AddData(map[string][]byte{"password": []byte(`pa"ss` + "\nword")})
	fmt.Println(r.String(`ConfigMap/prod/app: metadata.labels: Invalid value: "pa\"ss\nword"`))
	// Output:
	// ConfigMap/prod/app: metadata.labels: Invalid value: "***"
}
