package tenant_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"

	"gitsync.dev/gitsync/redact"
	"gitsync.dev/gitsync/tenant"
)

func ref(name string) tenant.Ref {
	return tenant.Ref{Name: name, Field: "spec.substituteFrom[0]"}
}

// TestReadsAsTheAccount: with spec.serviceAccountName a Secret is read
// only if the account may get it; a refusal names account and object and
// hides whether the object exists; what is read is told to the redactor.
//
// Checked: with View.get skipping the access check, "denied" is returned.
func TestReadsAsTheAccount(t *testing.T) {
	ns := env.Namespace(t)
	f := newFixture(t, nil, "")
	ctx := context.Background()
	createSecret(t, ns, "allowed", map[string]string{"v": "allowed-value-1"})
	createSecret(t, ns, "denied", map[string]string{"v": "denied-value-1"})
	grant(t, ns, "tenant", "allowed", "absent")
	red := redact.New()
	view := f.reader.For(gitSync(ns, "tenant", "allowed", "denied"), red)

	s, err := view.Secret(ctx, ref("allowed"))
	if err != nil || string(s.Data["v"]) != "allowed-value-1" {
		t.Fatalf("Secret allowed: %v", err)
	}
	if got := red.String("x allowed-value-1 y"); got != "x *** y" {
		t.Errorf("the redactor was not told the value read: %q", got)
	}
	for _, name := range []string{"denied", "ghost"} {
		_, err = view.Secret(ctx, ref(name))
		var fe *tenant.ForbiddenError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "system:serviceaccount:"+ns+":tenant") || !strings.Contains(err.Error(), "secrets/"+name) {
			t.Errorf("Secret %s: err = %v, want a refusal naming the account and the Secret", name, err)
		}
		if strings.Contains(red.String(err.Error()), "denied-value-1") {
			t.Errorf("refusal shows the value")
		}
	}
	if _, err := view.Secret(ctx, ref("absent")); !apierrors.IsNotFound(err) {
		t.Errorf("Secret absent (allowed, missing): err = %v, want NotFound", err)
	}
}

// TestNoAccountNoReview: a GitSync without an account reads its namespace
// with the agent's rights and costs no review; with the operator's default
// account it is checked as that account.
func TestNoAccountNoReview(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	createSecret(t, ns, "s", map[string]string{"v": "value-1234"})
	f := newFixture(t, nil, "")
	if _, err := f.reader.For(gitSync(ns, "", "s"), nil).Secret(ctx, ref("s")); err != nil {
		t.Fatal(err)
	}
	if n := f.reviews.n.Load(); n != 0 {
		t.Errorf("%d reviews for a GitSync without an account, want 0", n)
	}
	d := newFixture(t, nil, "default-reader")
	_, err := d.reader.For(gitSync(ns, "", "s"), nil).Secret(ctx, ref("s"))
	var fe *tenant.ForbiddenError
	if !errors.As(err, &fe) || fe.Account != "system:serviceaccount:"+ns+":default-reader" {
		t.Fatalf("with --default-service-account: err = %v, want a refusal as the default account", err)
	}
	grant(t, ns, "default-reader", "s")
	eventually(t, "the grant to the default account is seen", func() bool {
		_, err := d.reader.For(gitSync(ns, "", "s"), nil).Secret(ctx, ref("s"))
		return err == nil
	})
}

// TestAnswerRenewed: an allowed answer serves later reads without a review
// until the object changes, RBAC changes or one interval passes; a
// revoked right is then refused although the first answer allowed it.
//
// Checked: with access.check keeping answers whatever changed, the read
// after the RoleBinding's deletion is still allowed (the test times out).
func TestAnswerRenewed(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Now())
	f := newFixture(t, clk, "")
	s := createSecret(t, ns, "vars", map[string]string{"v": "first-value"})
	rb := grant(t, ns, "tenant", "vars")
	gs := gitSync(ns, "tenant", "vars")
	read := func() (string, error) {
		got, err := f.reader.For(gs, nil).Secret(ctx, ref("vars"))
		if err != nil {
			return "", err
		}
		return string(got.Data["v"]), nil
	}
	if _, err := read(); err != nil {
		t.Fatal(err)
	}
	// The RBAC watch starts with the first read; its initial list, and the
	// RoleBinding just created, may arrive after it and rightly renew the
	// answer. Once a read costs no review, the watch has caught up.
	eventually(t, "a read served by the kept answer", func() bool {
		before := f.reviews.n.Load()
		_, err := read()
		return err == nil && f.reviews.n.Load() == before
	})
	asked := f.reviews.n.Load()
	for range 3 {
		if _, err := read(); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.reviews.n.Load() - asked; n != 0 {
		t.Errorf("%d reviews for unchanged reads, want 0", n)
	}

	// The object changes: asked again.
	s.StringData = map[string]string{"v": "second-value"}
	if err := env.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the watch sees the new value", func() bool { v, _ := read(); return v == "second-value" })
	if f.reviews.n.Load() == asked {
		t.Error("no review after the Secret changed")
	}

	// An interval passes: asked again.
	asked = f.reviews.n.Load()
	clk.Step(gs.IntervalOrDefault())
	if _, err := read(); err != nil {
		t.Fatal(err)
	}
	if f.reviews.n.Load() != asked+1 {
		t.Errorf("reviews after an interval = %d, want %d", f.reviews.n.Load(), asked+1)
	}

	// RBAC changes: the right is revoked, the Secret unchanged.
	if err := env.Client.Delete(ctx, rb); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the revoked right is refused", func() bool {
		_, err := read()
		var fe *tenant.ForbiddenError
		return errors.As(err, &fe)
	})
}
