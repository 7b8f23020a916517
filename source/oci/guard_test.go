package oci_test

import (
	"errors"
	"net/http"
	"testing"

	"gitsync.dev/gitsync/source/oci"
)

type recordingTransport struct{ sent []string }

func (r *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r.sent = append(r.sent, req.URL.String())
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func TestSchemeGuard(t *testing.T) {
	for _, tc := range []struct {
		url         string
		plain, loop bool
		wantSent    bool
	}{
		{url: "https://10.0.0.5/v2/", wantSent: true},
		{url: "http://10.0.0.5/v2/"},
		{url: "http://registry.local/v2/"},
		{url: "http://127.0.0.1:5000/v2/"},
		{url: "http://127.0.0.1:5000/v2/", loop: true, wantSent: true},
		{url: "http://localhost:5000/v2/", loop: true, wantSent: true},
		{url: "http://[::1]:5000/v2/", loop: true, wantSent: true},
		{url: "http://192.168.1.9/v2/", loop: true},
		{url: "http://192.168.1.9/v2/", plain: true, wantSent: true},
	} {
		next := &recordingTransport{}
		g := &oci.SchemeGuard{Next: next, PlainHTTP: tc.plain, PlainLoopback: tc.loop}
		req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
		_, err := g.RoundTrip(req)
		if sent := len(next.sent) == 1; sent != tc.wantSent {
			t.Errorf("%s (plain %v, loopback %v): sent = %v, want %v", tc.url, tc.plain, tc.loop, sent, tc.wantSent)
		}
		if !tc.wantSent && !errors.Is(err, oci.ErrPlainHTTP) {
			t.Errorf("%s: err = %v, want ErrPlainHTTP", tc.url, err)
		}
	}
}
