package console_test

import (
	"context"
	"strings"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// Helpers of the browser tests of the workspaces, guardrails,
// destinations, audit log and activity pages.

// acceptDialogs makes the browser answer OK to every confirm() the page
// asks (the forms with data-confirm), recording each question.
func (b *browser) acceptDialogs() *[]string {
	asked := &[]string{}
	opening := chromedp.Events(b.ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range opening {
			if err != nil {
				return
			}
			b.mu.Lock()
			*asked = append(*asked, ev.Message)
			b.mu.Unlock()
			go chromedp.Do(b.ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
				_, err := cdp.Call(ctx, t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
				return err
			}))
		}
	}()
	return asked
}

// tick ticks a checkbox (or unticks a ticked one).
func (b *browser) tick(sel string) {
	b.t.Helper()
	b.run(chromedp.Click(chromedp.CSS(sel)))
}

// has reports whether the page holds an element that matches sel.
func (b *browser) has(sel string) bool {
	b.t.Helper()
	return get(b, chromedp.Evaluate[bool](`document.querySelector(`+jsString(sel)+`) !== null`))
}

// count returns how many elements match sel.
func (b *browser) count(sel string) int {
	b.t.Helper()
	return get(b, chromedp.Evaluate[int](`document.querySelectorAll(`+jsString(sel)+`).length`))
}

// value returns the value of a form field.
func (b *browser) value(sel string) string {
	b.t.Helper()
	return get(b, chromedp.Evaluate[string](`document.querySelector(`+jsString(sel)+`).value`))
}

// checked reports whether a checkbox is ticked.
func (b *browser) checked(sel string) bool {
	b.t.Helper()
	return get(b, chromedp.Evaluate[bool](`document.querySelector(`+jsString(sel)+`).checked`))
}

// html returns the page's HTML, for what tests must not find in it.
func (b *browser) html() string {
	b.t.Helper()
	return get(b, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
}

// contains reports whether the text of main holds s.
func (b *browser) contains(s string) bool {
	b.t.Helper()
	return strings.Contains(b.text("main"), s)
}

// both takes a screenshot at the desktop width and at 375 px, and fails
// when the page scrolls sideways at 375 px; it leaves the browser narrow.
func (b *browser) both(name string) {
	b.t.Helper()
	if b.width != 1280 {
		b.t.Fatal("both: the browser must start wide")
	}
	b.screenshot(name)
	b.narrow()
	b.must(!b.overflows(), "%s scrolls sideways at 375 px", name)
	b.screenshot(name + "-375")
}

// wide sets the viewport back to the desktop's 1280 px.
func (b *browser) wide() {
	b.t.Helper()
	b.width = 1280
	b.run(chromedp.EmulateViewport(1280, 900))
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "`", "\\`", "$", `\$`)
	return "`" + r.Replace(s) + "`"
}
