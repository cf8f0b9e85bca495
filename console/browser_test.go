package console_test

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser tests drive Debian's Chromium (headless) with chromedp
// against a real server (newEnv). They skip when Chromium is not installed,
// unless GATEHOUSE_TEST_BROWSER=required (CI sets it): then they fail.
// Every test fails on any error the page logs (an exception, a console
// error, a Content-Security-Policy violation) and on any request to an
// address that is not the loopback.

var screenshotFlag = flag.String("screenshots", "", "directory for the browser tests' screenshots (default: GATEHOUSE_SCREENSHOTS, else a temporary directory named in the log)")

var screenshots struct {
	once sync.Once
	dir  string
}

// screenshotDir is where screenshots go, made once per test binary.
func screenshotDir(t testing.TB) string {
	screenshots.once.Do(func() {
		dir := *screenshotFlag
		if dir == "" {
			dir = os.Getenv("GATEHOUSE_SCREENSHOTS")
		}
		if dir == "" {
			dir, _ = os.MkdirTemp("", "gatehouse-screenshots-")
		}
		if err := os.MkdirAll(dir, 0o755); err == nil {
			screenshots.dir = dir
		}
	})
	if screenshots.dir == "" {
		t.Fatal("no directory for screenshots")
	}
	return screenshots.dir
}

// chromium returns the path of the browser, or skips the test.
func chromium(t testing.TB) string {
	path := os.Getenv("GATEHOUSE_TEST_CHROMIUM")
	if path == "" {
		path, _ = exec.LookPath("chromium")
	}
	if path == "" {
		if os.Getenv("GATEHOUSE_TEST_BROWSER") == "required" {
			t.Fatal("GATEHOUSE_TEST_BROWSER=required but there is no chromium in PATH (apt-get install -y chromium)")
		}
		t.Skip("no chromium in PATH: the browser tests are skipped (apt-get install -y chromium; GATEHOUSE_TEST_BROWSER=required makes this a failure)")
	}
	return path
}

// browser is a headless Chromium with a fresh profile, on one tab.
type browser struct {
	t   *testing.T
	env *env
	ctx context.Context
	// width is the viewport's width, in CSS pixels.
	width int

	mu       sync.Mutex
	problems []string
}

// chromiumProcess is the one headless Chromium of the test binary: each
// test's browser is a browser context of its own in it (newBrowser), with
// its own cookies, storage and cache, as a fresh profile would have;
// starting a Chromium for each of some thirty browsers took a third of the
// package's time. TestMain stops it.
var chromiumProcess struct {
	once sync.Once
	ctx  context.Context
	stop func()
	err  error
}

// sharedChromium returns the context of the test binary's Chromium,
// started on first use at 1280×900 CSS pixels.
func sharedChromium(t testing.TB) context.Context {
	t.Helper()
	path := chromium(t)
	chromiumProcess.once.Do(func() {
		dir, err := os.MkdirTemp("", "gatehouse-chromium-")
		if err != nil {
			chromiumProcess.err = err
			return
		}
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true),
			chromedp.Flag("disable-quic", true), chromedp.Flag("no-first-run", true),
			chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true), chromedp.Flag("hide-scrollbars", true),
			chromedp.UserDataDir(dir), chromedp.WindowSize(1280, 900),
		)
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(allocCtx)
		chromiumProcess.ctx = ctx
		chromiumProcess.stop = func() {
			cancel()
			cancelAlloc()
			os.RemoveAll(dir)
		}
		chromiumProcess.err = chromedp.Do(ctx) // starts the browser, with no timeout
	})
	if chromiumProcess.err != nil {
		t.Fatalf("start chromium: %v", chromiumProcess.err)
	}
	return chromiumProcess.ctx
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if chromiumProcess.stop != nil {
		chromiumProcess.stop()
	}
	os.Exit(code)
}

// newBrowser gives the test a browser of its own, at 1280×900 CSS pixels:
// a tab in a new browser context of the shared Chromium.
func (e *env) newBrowser(t *testing.T) *browser {
	t.Helper()
	b := &browser{t: t, env: e, width: 1280}
	ctx, cancel := chromedp.NewContext(sharedChromium(t), chromedp.WithNewBrowserContext(), chromedp.WithListener(b.watch))
	b.ctx = ctx
	t.Cleanup(func() {
		cancel() // closes the tab and its browser context
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("browser: %s", p)
		}
	})
	if err := chromedp.Do(ctx); err != nil { // opens the tab
		t.Fatalf("open a tab in chromium: %v", err)
	}
	// A tab opened in a new browser context gets a 1280×757 viewport in the
	// 1280×900 window (measured): the pages are tested at 1280×900.
	b.run(chromedp.EmulateViewport(1280, 900))
	b.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, log.Enable, cdp.Empty{})
		return err
	}))
	return b
}

// watch records what makes a test fail: errors of the page, and requests
// that leave the loopback.
func (b *browser) watch(ev any) {
	var problem string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		problem = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			problem += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			problem = "console." + string(ev.Type) + ": " + consoleArgs(ev.Args)
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level == log.EntryLevelError && !expectedError(ev.Entry) {
			problem = "log: " + ev.Entry.Text + " " + ev.Entry.URL
		}
	case *network.EventRequestWillBeSent:
		if !loopback(ev.Request.URL) {
			problem = "request to a non-loopback address: " + ev.Request.URL
		}
	}
	if problem != "" {
		b.mu.Lock()
		b.problems = append(b.problems, problem)
		b.mu.Unlock()
	}
}

// expectedError tells the log entries of answers a test asks for on
// purpose (a 4xx page: "Failed to load resource: the server responded with
// a status of 403") from real errors. Only network entries of documents
// are expected; a failing script, style or image is not.
func expectedError(e *log.Entry) bool {
	return e.Source == log.EntrySourceNetwork && regexp.MustCompile(`status of (400|401|403|404|405|429)\b`).MatchString(e.Text) &&
		!strings.Contains(e.URL, "/assets/")
}

func consoleArgs(args []*runtime.RemoteObject) string {
	var parts []string
	for _, a := range args {
		if a.Value != nil {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}

// loopback reports whether a URL the page asks for stays on this machine
// (data: and blob: URLs stay in the page).
func loopback(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch u.Scheme {
	case "data", "blob", "about", "chrome", "devtools":
		return true
	}
	h := u.Hostname()
	return h == "127.0.0.1" || h == "localhost" || h == "::1"
}

// run runs actions one after the other, failing the test on an error;
// each has 30 s.
func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	for _, a := range actions {
		get(b, a) // one at a time: get may run an action again, never the ones before it
	}
}

// get runs an action that returns a value, failing the test on an error,
// within 30 s.
func get[T any](b *browser, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	for range 3 {
		if err == nil || !staleNode(err) {
			break
		}
		// Chromium renumbered the document's nodes between the query and
		// the action (it does after a viewport change, when the machine is
		// slow): the action did not happen, so it is safe to run again.
		v, err = chromedp.Run(ctx, a)
	}
	if err != nil {
		b.t.Fatalf("browser: %v (at %s)", err, b.location())
	}
	return v
}

// staleNode reports whether err is Chromium's refusal of a node id that
// is no longer in its document.
func staleNode(err error) bool {
	return strings.Contains(err.Error(), "No node with given id found") || strings.Contains(err.Error(), "Could not find node with given id")
}

// location is the page's URL, for messages.
func (b *browser) location() string {
	ctx, cancel := context.WithTimeout(b.ctx, 2*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(ctx, chromedp.Location())
	return loc
}

// visit opens a path of the server and waits for its <main>.
func (b *browser) visit(path string) {
	b.t.Helper()
	b.run(chromedp.Navigate(b.env.URL+path), chromedp.WaitReady(chromedp.CSS("main")))
}

// path returns the path (and query) of the page shown.
func (b *browser) path() string {
	b.t.Helper()
	u, err := url.Parse(b.location())
	if err != nil {
		b.t.Fatal(err)
	}
	return u.RequestURI()
}

// text returns the text of the first element that matches a CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(get(b, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible)))
}

// fill types values into the fields named by CSS selector, replacing
// what they held.
func (b *browser) fill(fields map[string]string) {
	b.t.Helper()
	for sel, v := range fields {
		b.run(chromedp.SetValue(chromedp.CSS(sel), v))
	}
}

// submit clicks a button and waits for the next page's <main>.
func (b *browser) submit(button string) {
	b.t.Helper()
	b.run(chromedp.Evaluate[chromedp.Void](`document.body.dataset.page = "old"`),
		chromedp.Click(chromedp.CSS(button)),
		chromedp.WaitReady(chromedp.CSS(`body:not([data-page="old"]) main`)))
}

// signInWithKey signs in with the organization's management key from the
// sign-in page.
func (b *browser) signInWithKey() {
	b.t.Helper()
	if !strings.HasPrefix(b.path(), "/sign-in") {
		b.visit("/sign-in")
	}
	b.run(chromedp.Click(chromedp.CSS("details > summary")))
	b.fill(map[string]string{"#f-key": b.env.mgmt})
	b.submit(`form[action="/sign-in/key"] button[type="submit"]`)
}

// signIn signs in with an email and a password from the sign-in page.
func (b *browser) signIn(email, password string) {
	b.t.Helper()
	if !strings.HasPrefix(b.path(), "/sign-in") {
		b.visit("/sign-in")
	}
	b.fill(map[string]string{"#f-email": email, "#f-password": password})
	b.submit(`form[action="/sign-in"] button[type="submit"]`)
}

// narrow sets the viewport of a phone: 375 CSS pixels wide.
func (b *browser) narrow() {
	b.t.Helper()
	b.width = 375
	b.run(chromedp.EmulateViewport(375, 812, chromedp.EmulateScale(2), chromedp.EmulateMobile))
}

// overflows reports whether the page is wider than the viewport (it
// scrolls sideways).
func (b *browser) overflows() bool {
	b.t.Helper()
	return get(b, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
}

// screenshot saves the whole page as NAME.png in the screenshots'
// directory.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png := get(b, chromedp.FullScreenshot(100))
	path := filepath.Join(screenshotDir(b.t), name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// status returns the HTTP status of the page shown, as the document's
// navigation entry reports it.
func (b *browser) status() int {
	b.t.Helper()
	return get(b, chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
}

// must fails the test with a message and the page's location unless ok.
func (b *browser) must(ok bool, format string, args ...any) {
	b.t.Helper()
	if !ok {
		b.t.Fatalf("%s (at %s)", fmt.Sprintf(format, args...), b.location())
	}
}

// TestBrowserWatchAndIsolation: a test's browser, a browser context of
// the shared Chromium, still reports what fails a test (a console error,
// an exception, a request that leaves the loopback), and two browsers of
// one test share no cookies: the second is not signed in.
func TestBrowserWatchAndIsolation(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser(t)
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><main>page</main><script>
			console.error("watched error");
			fetch("http://192.0.2.1/away").catch(() => {});
			setTimeout(() => { throw new Error("watched exception") }, 0);
		</script>`))
	}))
	defer page.Close()
	b.run(chromedp.Navigate(page.URL), chromedp.WaitReady(chromedp.CSS("main")), chromedp.Sleep(300*time.Millisecond))
	b.mu.Lock()
	seen := strings.Join(b.problems, "\n")
	b.problems = nil // seen on purpose: they must not fail the test
	b.mu.Unlock()
	for _, want := range []string{`console.error: "watched error"`, "exception: ", "watched exception", "request to a non-loopback address: http://192.0.2.1/away"} {
		if !strings.Contains(seen, want) {
			t.Errorf("the browser's watch did not report %q; it reported:\n%s", want, seen)
		}
	}

	b.signInWithKey()
	other := e.newBrowser(t)
	other.run(chromedp.Navigate(e.URL + "/keys"))
	if p := other.path(); !strings.HasPrefix(p, "/sign-in") {
		t.Errorf("a second browser opened /keys at %s: it shares the first one's session", p)
	}
	// The failed fetch's log entry may come after the check: it is expected too.
	b.mu.Lock()
	b.problems = slices.DeleteFunc(b.problems, func(p string) bool { return strings.Contains(p, "192.0.2.1") })
	b.mu.Unlock()
}
