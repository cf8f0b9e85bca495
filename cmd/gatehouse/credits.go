package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"gatehouse"
)

// creditsCommand runs `gatehouse credits grant` and `gatehouse credits show`.
func creditsCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	const use = "usage: gatehouse credits grant --org ID --amount USD, or gatehouse credits show --org ID"
	if len(args) == 0 || (args[0] != "grant" && args[0] != "show") {
		return usageError{use}
	}
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("credits "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	org := fs.String("org", "", "organization id (required; see gatehouse orgs create)")
	var amount *string
	if args[0] == "grant" {
		amount = fs.String("amount", "", "US dollars to add to the organization's credits, such as 25 or 0.5; negative takes them back (required)")
	}
	databaseFlag(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *org == "" {
		return usageError{"--org is required: " + use}
	}
	var dollars gatehouse.Money
	if amount != nil {
		v, err := gatehouse.ParseMoney(*amount)
		if err != nil || v == 0 {
			return usageError{fmt.Sprintf("--amount %q: must be a number of US dollars other than 0, such as 25 or 0.5 (negative takes credits back), at most 1000000000", *amount)}
		}
		dollars = v
	}
	return withStore(ctx, cfg, stderr, openMode{existing: true}, func(store gatehouse.Store) error {
		notFound := func(err error) error {
			if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
				return fmt.Errorf("credits %s: organization %q not found in %s: pass an id that gatehouse orgs list shows", args[0], *org, cfg.DatabaseURL)
			}
			return fmt.Errorf("credits %s: %s", args[0], gatehouse.ErrorMessage(err))
		}
		if amount != nil {
			g, err := store.GrantCredits(ctx, *org, dollars)
			if err != nil {
				return notFound(err)
			}
			what := fmt.Sprintf("Granted $%s to", g.Amount)
			if g.Amount < 0 {
				what = fmt.Sprintf("Took $%s back from", -g.Amount)
			}
			fmt.Fprintf(stdout, "%s organization %s (grant %s); its credits now total, in US dollars:\n%s\n", what, *org, g.ID, g.Total)
			return nil
		}
		return showCredits(ctx, store, *org, stdout, notFound)
	})
}

// showCredits prints an organization's credits, what it spent against
// them, and its grants, newest first.
func showCredits(ctx context.Context, store gatehouse.Store, org string, stdout io.Writer, fail func(error) error) error {
	c, err := store.FindCredits(ctx, org)
	if err != nil {
		return fail(err)
	}
	grants, total, err := store.FindCreditGrants(ctx, org, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(stdout, "Organization %s\n", org)
	if c.Total == nil {
		fmt.Fprintf(stdout, "credits:   unlimited (none granted; GET /credits shows total_credits %s)\n", gatehouse.UnlimitedCredits)
		fmt.Fprintf(stdout, "usage:     $%s\n", c.Usage)
	} else {
		fmt.Fprintf(stdout, "credits:   $%s\nusage:     $%s\nremaining: $%s\n", *c.Total, c.Usage, max(*c.Total-c.Usage, 0))
	}
	if total > 0 {
		fmt.Fprintf(stdout, "grants, newest first (%d in all):\n", total)
	}
	for _, g := range grants {
		amount := "+$" + g.Amount.String()
		if g.Amount < 0 {
			amount = "-$" + (-g.Amount).String()
		}
		fmt.Fprintf(stdout, "  %s  %s  total $%s  %s\n", g.CreatedAt.UTC().Format("2006-01-02T15:04:05Z"), amount, g.Total, g.ID)
	}
	if total > len(grants) {
		fmt.Fprintf(stdout, "  … %d older grants\n", total-len(grants))
	}
	return nil
}
