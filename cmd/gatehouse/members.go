package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"gatehouse"
)

// membersCommand runs `gatehouse members invite` and `gatehouse members
// list`: no server needs to run, only the database to exist.
func membersCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && isHelp(args[0]) {
		fmt.Fprint(stdout, usage)
		return nil
	}
	const use = "usage: gatehouse members invite --org ID --email EMAIL [--role admin|member], or gatehouse members list --org ID"
	if len(args) == 0 || (args[0] != "invite" && args[0] != "list") {
		return usageError{use}
	}
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return err
	}
	fs := flag.NewFlagSet("members "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	org := fs.String("org", "", "organization id (required; see gatehouse orgs list)")
	var email, role *string
	if args[0] == "invite" {
		email = fs.String("email", "", "email address of the person to invite (required)")
		role = fs.String("role", "", "their role: admin or member (default member; an existing member keeps their own)")
		publicURLFlag(fs, &cfg)
		fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "the server's listen address, from which the link's URL is derived without --public-url (env GATEHOUSE_ADDR)")
	}
	databaseFlag(fs, &cfg)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *org == "" {
		return usageError{"--org is required: " + use}
	}
	fail := func(err error) error {
		if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return fmt.Errorf("members %s: organization %q not found in %s: pass an id that gatehouse orgs list shows", args[0], *org, databaseName(cfg))
		}
		return fmt.Errorf("members %s: %s", args[0], gatehouse.ErrorMessage(err))
	}
	if args[0] == "list" {
		return withStore(ctx, cfg, stderr, openMode{existing: true}, func(store gatehouse.Store) error {
			return listMembers(ctx, store, *org, stdout, fail)
		})
	}
	wire, err := cliRole(*role)
	if err != nil {
		return err
	}
	if *email == "" {
		return usageError{"--email is required: " + use}
	}
	return withStore(ctx, cfg, stderr, openMode{existing: true}, func(store gatehouse.Store) error {
		v, token, err := store.CreateInvitation(ctx, *org, gatehouse.InvitationCreate{Email: *email, Role: wire})
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "Invited %s to organization %s as %s; the link works once, until %s. It is shown only once:\n%s\n",
			v.Email, *org, v.Role, v.ExpiresAt.UTC().Format(time.RFC3339), gatehouse.InvitationURL(cfg.publicURL(cfg.Addr), token))
		return nil
	})
}

// cliRole reads --role: admin or member (or the API's org:admin and
// org:member); "" leaves the role to the default.
func cliRole(role string) (string, error) {
	switch role {
	case "":
		return "", nil
	case "admin", gatehouse.RoleAdmin:
		return gatehouse.RoleAdmin, nil
	case "member", gatehouse.RoleMember:
		return gatehouse.RoleMember, nil
	}
	return "", usageError{fmt.Sprintf("--role %q: want admin or member", role)}
}

// listMembers prints the organization's members, oldest first: id first,
// and whether they can sign in to the console.
func listMembers(ctx context.Context, store gatehouse.Store, org string, stdout io.Writer, fail func(error) error) error {
	if _, err := store.FindOrganization(ctx, org); err != nil {
		return fail(err)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tCONSOLE\tEMAIL")
	for offset := 0; ; offset += gatehouse.MaxPageSize {
		members, _, err := store.FindMembers(ctx, org, gatehouse.Page{Offset: offset, Limit: gatehouse.MaxPageSize})
		if err != nil {
			return fail(err)
		}
		for _, m := range members {
			console := "no password"
			if m.HasPassword {
				console = "password set"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", m.ID, m.Role, console, m.Email)
		}
		if len(members) < gatehouse.MaxPageSize {
			break
		}
	}
	return tw.Flush()
}
