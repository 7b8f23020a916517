// Package browsertest drives a real headless Chromium through
// chromedriver's WebDriver protocol (plain HTTP and JSON, no client
// library), for tests of the web view: open a page, find elements, press
// keys, run a script, take a screenshot.
//
// Chromium and chromedriver come from Debian (apt-get install chromium
// chromium-driver; hack/browser.sh). A test without them is skipped, unless
// GITSYNC_REQUIRE_BROWSER is set (make test sets it), when it fails.
package browsertest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Browser is one WebDriver session of a headless Chromium.
type Browser struct {
	t       testing.TB
	base    string
	session string
	hc      *http.Client
}

// Keys of the WebDriver protocol's key actions.
const (
	KeyTab    = "\uE004"
	KeyEnter  = "\uE007"
	KeyEscape = "\uE00C"
)

var startedOn = regexp.MustCompile(`was started successfully on port (\d+)`)

// Start launches chromedriver on a port of its choosing and opens a
// session of a headless Chromium sized width×height; both stop when the
// test ends.
func Start(t testing.TB, width, height int) *Browser {
	t.Helper()
	driver, chrome := find("chromedriver"), find("chromium", "chromium-browser", "google-chrome")
	if driver == "" || chrome == "" {
		msg := "no chromium and chromedriver on PATH (apt-get install chromium chromium-driver, or hack/browser.sh)"
		if os.Getenv("GITSYNC_REQUIRE_BROWSER") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, driver, "--port=0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := startedOn.FindStringSubmatch(sc.Text()); m != nil {
				port <- m[1]
			}
		}
		close(port)
	}()
	p, ok := <-port
	if !ok {
		t.Fatal("chromedriver exited before it said its port")
	}
	b := &Browser{t: t, base: "http://127.0.0.1:" + p, hc: &http.Client{Timeout: 2 * time.Minute}}
	args := []string{"--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
		"--no-first-run", "--disable-extensions", "--user-data-dir=" + t.TempDir(),
		fmt.Sprintf("--window-size=%d,%d", width, height), "--force-device-scale-factor=1"}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	b.call(http.MethodPost, "/session", map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName":        "chrome",
		"goog:chromeOptions": map[string]any{"binary": chrome, "args": args},
	}}}, &created)
	b.session = created.SessionID
	t.Cleanup(func() { b.call(http.MethodDelete, "/session/"+b.session, nil, nil) })
	return b
}

func find(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// call sends one WebDriver command and decodes its value into out.
func (b *Browser) call(method, path string, in, out any) {
	b.t.Helper()
	if err := b.try(method, path, in, out); err != nil {
		b.t.Fatal(err)
	}
}

func (b *Browser) try(method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("webdriver %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("webdriver %s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("webdriver %s %s: %d %s", method, path, resp.StatusCode, env.Value)
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

func (b *Browser) s(path string) string { return "/session/" + b.session + path }

// Open navigates to url and returns when the page has loaded.
func (b *Browser) Open(url string) {
	b.t.Helper()
	b.call(http.MethodPost, b.s("/url"), map[string]string{"url": url}, nil)
}

// URL is the page's address.
func (b *Browser) URL() string {
	var u string
	b.call(http.MethodGet, b.s("/url"), nil, &u)
	return u
}

// Run executes script (a function body; arguments as arguments[i]) in the
// page and decodes what it returns into out.
func (b *Browser) Run(out any, script string, args ...any) {
	b.t.Helper()
	if args == nil {
		args = []any{}
	}
	b.call(http.MethodPost, b.s("/execute/sync"), map[string]any{"script": script, "args": args}, out)
}

// Text is the text of the first element matching css, "" when none does.
func (b *Browser) Text(css string) string {
	b.t.Helper()
	var s string
	b.Run(&s, `var e = document.querySelector(arguments[0]); return e ? e.innerText : "";`, css)
	return s
}

// HTML is the page's whole markup as the browser holds it now.
func (b *Browser) HTML() string {
	b.t.Helper()
	var s string
	b.Run(&s, `return document.documentElement.outerHTML;`)
	return s
}

// Focused is the id of the focused element.
func (b *Browser) Focused() string {
	b.t.Helper()
	var s string
	b.Run(&s, `return document.activeElement ? document.activeElement.id : "";`)
	return s
}

// Press types keys (characters or the Key constants) into the focused
// element, one key action each.
func (b *Browser) Press(keys ...string) {
	b.t.Helper()
	var acts []map[string]string
	for _, k := range keys {
		for _, r := range k {
			acts = append(acts, map[string]string{"type": "keyDown", "value": string(r)}, map[string]string{"type": "keyUp", "value": string(r)})
		}
	}
	b.call(http.MethodPost, b.s("/actions"), map[string]any{"actions": []any{
		map[string]any{"type": "key", "id": "keyboard", "actions": acts},
	}}, nil)
	b.call(http.MethodDelete, b.s("/actions"), nil, nil)
}

// WaitFor polls cond (a script returning true or false) until it holds,
// failing the test after timeout with what.
func (b *Browser) WaitFor(what string, timeout time.Duration, script string, args ...any) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		if args == nil {
			args = []any{}
		}
		err := b.try(http.MethodPost, b.s("/execute/sync"), map[string]any{"script": script, "args": args}, &ok)
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("%s: not within %s (last error: %v)", what, timeout, err)
		}
		time.Sleep(100 * time.Millisecond) // the poll interval of a condition on the page, not a settle
	}
}

// Screenshot saves the viewport as dir/name.png and returns the path.
func (b *Browser) Screenshot(dir, name string) string {
	b.t.Helper()
	var data string
	b.call(http.MethodGet, b.s("/screenshot"), nil, &data)
	png, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	p := filepath.Join(dir, strings.ReplaceAll(name, "/", "_")+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	return p
}
