package bench

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/internal/gittest"
)

// Monorepo push (issue 18 item 3): monorepo.syncs GitSyncs follow one path
// each of one repository served over HTTP on loopback (git http-backend),
// all signed with one webhook Secret, the real agent binary. After they
// converge, each of monorepo.pushes commits changes one ConfigMap of one
// path, pushes and sends the signed GitHub push event. Per push it reports
// push→applied of the changed path and of all GitSyncs, the Git requests
// (info/refs, upload-pack), the agent's apiserver requests by verb, its
// reconciles by result, and the Events written.
//
//	go test ./bench -run '^$' -bench BenchmarkMonorepoPush -benchtime 1x -timeout 30m
var (
	monoSyncs      = flag.Int("monorepo.syncs", 500, "GitSyncs, one path each, of BenchmarkMonorepoPush's repository")
	monoObjects    = flag.Int("monorepo.objects", 4, "ConfigMaps per path")
	monoPushes     = flag.Int("monorepo.pushes", 10, "pushes (samples), each changing one path")
	monoConcurrent = flag.Int("monorepo.concurrent", 4, "the agent's --concurrent")
)

func BenchmarkMonorepoPush(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	bin := buildAgent(b, dir)
	root := filepath.Join(dir, "git")
	run := "mono-" + utilrand.String(5)
	bare := filepath.Join(root, run+".git")
	gittest.NewBare(b, bare)
	gittest.OpenRepo(b, bare).GitInput(monorepoImport(*monoSyncs, *monoObjects), "fast-import", "--quiet")
	work := filepath.Join(dir, "work")
	runGit(b, "", nil, "clone", "-q", bare, work)
	first := runGit(b, work, nil, "rev-parse", "HEAD")
	srv, err := gittest.Start(root, gittest.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Close)
	url := srv.URL + "/" + run + ".git"
	hook := freeLoopback(b)
	agent := startAgent(b, bin, env.Kubeconfig, *monoConcurrent, "--webhook-addr", hook, "--allow-networks", "127.0.0.0/8")
	c := gitsyncClient(b)

	createNamespaces(b, []string{run}, run)
	b.Cleanup(func() { cleanupScale(b, c, []string{run}) })
	token := "bench-" + utilrand.String(8)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "hook", Namespace: run}, Data: map[string][]byte{"token": []byte(token)}}
	if err := c.Create(ctx, secret); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for i := range *monoSyncs {
		gs := &gitsyncv1.GitSync{
			ObjectMeta: metav1.ObjectMeta{Name: monoName(i), Namespace: run},
			Spec: gitsyncv1.GitSyncSpec{
				Source:   gitsyncv1.GitSource{URL: url, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "apps/" + monoName(i)},
				Interval: metav1.Duration{Duration: time.Hour},
				Prune:    true,
				Webhook:  &gitsyncv1.WebhookSpec{SecretRef: gitsyncv1.LocalObjectReference{Name: "hook"}},
			},
		}
		if err := c.Create(ctx, gs); err != nil {
			b.Fatal(err)
		}
	}
	if _, _, err := watchApplied(ctx, c, run, first, "", *monoSyncs, 5*time.Minute); err != nil {
		b.Fatalf("first commit not applied everywhere: %v\n%s", err, agent.logTail(20))
	}
	b.Logf("%d GitSyncs × %d ConfigMaps converged in %v", *monoSyncs, *monoObjects, time.Since(start).Round(time.Millisecond))

	// With GITSYNC_BENCH_PPROF_DIR, a CPU profile of the agent while it
	// serves the pushes (not figures to quote).
	profiled := make(chan struct{})
	go func() {
		defer close(profiled)
		agent.saveProfile(b, "/debug/pprof/profile?seconds=30", "monorepo-push.cpu")
	}()
	b.Cleanup(func() { <-profiled })
	var changed, all []time.Duration
	per := monoCosts{requests: map[string]float64{}, reconciles: map[string]float64{}}
	b.ResetTimer()
	for i := range *monoPushes {
		b.StopTimer()
		j := (i*97 + 13) % *monoSyncs // spread over the index, never the first
		before, err := scrapeAgent(agent.metrics)
		if err != nil {
			b.Fatal(err)
		}
		eventsBefore := countEvents(b, c, run)
		commit := commitPush(b, work, map[string]string{fmt.Sprintf("apps/%s/cm-0.yaml", monoName(j)): monoCM(j, 0, i+1)})
		srv.ResetCounts()
		b.StartTimer()
		t0 := time.Now()
		sendPush(b, "http://"+hook, token, url, commit)
		one, last, err := watchApplied(ctx, c, run, commit, monoName(j), *monoSyncs, 2*time.Minute)
		if err != nil {
			b.Fatalf("push %d not applied everywhere: %v\n%s", i+1, err, agent.logTail(20))
		}
		b.StopTimer()
		changed = append(changed, one.Sub(t0))
		all = append(all, last.Sub(t0))
		per.refs += float64(srv.ListRefs.Load())
		per.packs += float64(srv.UploadPack.Load())
		after, err := scrapeAgent(agent.metrics)
		if err != nil {
			b.Fatal(err)
		}
		for k, v := range diffCounts(after.requests, before.requests) {
			per.requests[k] += v
		}
		for k, v := range diffCounts(after.reconciles, before.reconciles) {
			per.reconciles[k] += v
		}
		per.events += float64(countEvents(b, c, run) - eventsBefore)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(len(changed))
	slices.Sort(changed)
	slices.Sort(all)
	b.ReportMetric(quantile(changed, 0.5).Seconds(), "s-changed-p50")
	b.ReportMetric(quantile(changed, 0.95).Seconds(), "s-changed-p95")
	b.ReportMetric(quantile(all, 0.5).Seconds(), "s-all-p50")
	b.ReportMetric(quantile(all, 0.95).Seconds(), "s-all-p95")
	b.ReportMetric(per.refs/n, "info-refs/push")
	b.ReportMetric(per.packs/n, "upload-packs/push")
	b.ReportMetric(per.events/n, "events/push")
	load, _ := os.ReadFile("/proc/loadavg")
	b.Logf("push→applied of the changed path: %v", changed)
	b.Logf("push→applied of all %d: %v", *monoSyncs, all)
	b.Logf("per push: apiserver requests by verb %v, reconciles by result %v; load average %s",
		perPush(per.requests, n), perPush(per.reconciles, n), strings.TrimSpace(string(load)))
}

// monoCosts sums what the pushes cost.
type monoCosts struct {
	refs, packs, events  float64
	requests, reconciles map[string]float64
}

func perPush(m map[string]float64, n float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = v / n
	}
	return out
}

func monoName(i int) string { return fmt.Sprintf("app-%03d", i) }

// monoCM is ConfigMap k of path i at version v.
func monoCM(i, k, v int) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%d\ndata:\n  version: %q\n  payload: %s\n",
		monoName(i), k, fmt.Sprint(v), strings.Repeat("x", 256))
}

// monorepoImport is a git fast-import stream of one commit on main with
// objects ConfigMaps under each of apps/app-NNN/ for syncs paths.
func monorepoImport(syncs, objects int) []byte {
	var s bytes.Buffer
	s.WriteString("commit refs/heads/main\ncommitter bench <bench@gitsync.dev> 1700000000 +0000\ndata 9\nmonorepo\n")
	for i := range syncs {
		for k := range objects {
			body := monoCM(i, k, 0)
			fmt.Fprintf(&s, "M 100644 inline apps/%s/cm-%d.yaml\ndata %d\n%s\n", monoName(i), k, len(body), body)
		}
	}
	s.WriteString("\n")
	return s.Bytes()
}

// watchApplied watches the GitSyncs of ns until want of them name commit as
// applied, and returns when the one called name did (zero if name is
// empty) and when the last did.
func watchApplied(ctx context.Context, c client.WithWatch, ns, commit, name string, want int, timeout time.Duration) (time.Time, time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var named time.Time
	seen := map[string]bool{}
	note := func(gs *gitsyncv1.GitSync) {
		if seen[gs.Name] || !strings.Contains(gs.Status.LastAppliedRevision, commit) {
			return
		}
		seen[gs.Name] = true
		if gs.Name == name {
			named = time.Now()
		}
	}
	list := &gitsyncv1.GitSyncList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return named, time.Time{}, err
	}
	for i := range list.Items {
		note(&list.Items[i])
	}
	rv := list.ResourceVersion
	for len(seen) < want {
		w, err := c.Watch(ctx, &gitsyncv1.GitSyncList{}, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})
		if err != nil {
			return named, time.Time{}, err
		}
		for ev := range w.ResultChan() {
			gs, ok := ev.Object.(*gitsyncv1.GitSync)
			if !ok || ev.Type != watch.Modified {
				continue
			}
			rv = gs.ResourceVersion
			note(gs)
			if len(seen) == want {
				break
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return named, time.Time{}, fmt.Errorf("%d of %d GitSyncs applied %s: %w", len(seen), want, commit, err)
		}
	}
	return named, time.Now(), nil
}

// countEvents is the number of Events in ns.
func countEvents(b *testing.B, c client.Client, ns string) int {
	b.Helper()
	list := &eventsv1.EventList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	return len(list.Items)
}
