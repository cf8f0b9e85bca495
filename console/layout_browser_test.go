package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

// seedUsage gives the organization a month of usage, as the gateway meters
// it: keys of an admin and of a member, real chat completions of three
// models on each of the last 30 days (the env's clock moved back, then a
// day at a time), some workspace budgets and credits. It leaves the clock
// at the real time (the browser's, which judges the cookies).
func (e *env) seedUsage(member *gatehouse.Member) map[string]*gatehouse.Key {
	e.t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	e.clock.Set(now.AddDate(0, 0, -29))
	keys := map[string]*gatehouse.Key{}
	plain := map[string]string{}
	for i, name := range []string{"ci-pipeline", "support-bot", "analytics-nightly", "staging", "grace-laptop"} {
		c := gatehouse.KeyCreate{Name: name, Limit: new(gatehouse.USD(int64(20 * (i + 1)))), LimitReset: gatehouse.Monthly}
		if name == "grace-laptop" {
			c.CreatorUserID, c.LimitReset = &member.ID, gatehouse.Weekly
		}
		k, p, err := e.store.CreateKey(ctx, e.org.ID, c)
		if err != nil {
			e.t.Fatal(err)
		}
		keys[name], plain[name] = k, p
	}
	models := []string{"fake/echo", "fake/echo-mini", "fake/echo-pro"}
	for day := 0; day < 30; day++ {
		for i, name := range []string{"ci-pipeline", "support-bot", "analytics-nightly", "staging", "grace-laptop"} {
			calls := (day*7+i*3)%4 + i%2
			for call := 0; call < calls; call++ {
				words := strings.Repeat("tokens ", 5+(day+call*i)%20)
				if status := e.chatWith(plain[name], models[(day+i+call)%len(models)], words); status != http.StatusOK {
					e.t.Fatalf("day %d, %s: status %d", day, name, status)
				}
			}
		}
		if day < 29 {
			e.clock.Add(24 * time.Hour)
		}
	}
	e.clock.Set(now)
	if _, err := e.store.SetWorkspaceBudget(ctx, e.org.ID, "", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(50))}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.GrantCredits(ctx, e.org.ID, gatehouse.USD(100)); err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// TestBrowserOverview: the overview shows a month of real usage (spend of
// today, the week and the month; the charts by key and by model drawn with
// their series), the key and members pages show it too, every page is
// usable at 375 px wide (nothing wider than the screen), and a member's
// overview holds only her keys. Its screenshots are the README's.
func TestBrowserOverview(t *testing.T) {
	e := newEnv(t)
	grace := e.member("grace@example.com", "", adaPassword)
	keys := e.seedUsage(grace)
	e.member("ada@example.com", gatehouse.RoleAdmin, adaPassword)

	b := e.newBrowser(t)
	b.signIn("ada@example.com", adaPassword)
	b.run(chromedp.WaitVisible(chromedp.CSS(`canvas[data-chart="chart-models"][data-drawn="true"]`)))
	series := get(b, chromedp.Evaluate[[]string](`Chart.getChart(document.querySelector('[data-chart="chart-keys"]')).data.datasets.map(d => d.label)`))
	b.must(len(series) == 5, "series of the chart by key: %v", series)
	models := get(b, chromedp.Evaluate[[]string](`Chart.getChart(document.querySelector('[data-chart="chart-models"]')).data.datasets.map(d => d.label)`))
	b.must(len(models) == 3, "series of the chart by model: %v", models)
	b.must(!strings.Contains(b.text(".grid"), "$0.00"), "a period without spend after a month of calls:\n%s", b.text(".grid"))
	b.must(strings.Contains(b.text("main"), "Credits:") && strings.Contains(b.text("main"), "monthly"), "no credits nor budgets shown")
	b.screenshot("overview")
	b.visit("/keys")
	b.screenshot("keys")

	b.narrow()
	for _, page := range []struct{ name, path string }{
		{"overview", "/"}, {"keys", "/keys"}, {"key", "/keys/" + keys["support-bot"].Hash}, {"members", "/members"},
		{"authorize", "/auth?callback_url=https%3A%2F%2Fapp.example.com%2Fcallback"},
	} {
		b.visit(page.path)
		if page.name == "overview" || page.name == "key" {
			b.run(chromedp.WaitVisible(chromedp.CSS(`canvas[data-drawn="true"]`)))
		}
		b.must(!b.overflows(), "%s is wider than 375 px", page.path)
		b.screenshot("narrow-" + page.name)
	}

	m := e.newBrowser(t)
	m.signIn("grace@example.com", adaPassword)
	m.run(chromedp.WaitVisible(chromedp.CSS(`canvas[data-chart="chart-keys"][data-drawn="true"]`)))
	mine := get(m, chromedp.Evaluate[[]string](`Chart.getChart(document.querySelector('[data-chart="chart-keys"]')).data.datasets.map(d => d.label)`))
	m.must(len(mine) == 1 && mine[0] == "grace-laptop", "a member's chart by key: %v", mine)
	m.must(strings.Contains(m.text("main"), "Your key"), "a member's overview shows no limits of her keys")
	m.screenshot("overview-member")
}
