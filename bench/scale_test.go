package bench

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

// The agent at scale: the real `gitsync run` binary as a child process
// managing scale.syncs GitSyncs of scale.objects objects each (100 × 100 =
// 10,000 by default), each GitSync in its own namespace with its own bare
// Git repository (file:// URL). Run it once:
//
//	go test ./bench -run '^$' -bench BenchmarkAgentScale -benchtime 1x -timeout 30m
//
// ns/op is the time from creating the GitSyncs until every one is Ready at
// its commit; the agent's memory, CPU and API requests are reported beside
// it, at convergence and over scale.steady of steady state (which starts
// scaleSettle after convergence).
var (
	scaleSyncs      = flag.Int("scale.syncs", 100, "GitSyncs (namespaces, repositories) in BenchmarkAgentScale")
	scaleObjects    = flag.Int("scale.objects", 100, "objects per GitSync in BenchmarkAgentScale")
	scaleConcurrent = flag.String("scale.concurrent", "4,16", "comma-separated --concurrent values, one sub-benchmark each")
	scaleSteady     = flag.Duration("scale.steady", 30*time.Second, "steady-state window after convergence")
	scaleTimeout    = flag.Duration("scale.timeout", 15*time.Minute, "give up on convergence after this long")
	scaleCPUProfile = flag.Duration("scale.cpuprofile", 60*time.Second, "length of the agent and kube-apiserver CPU profiles taken from GitSync creation on (the floor: from its start) (GITSYNC_BENCH_PPROF_DIR only)")
)

// scaleSettle separates convergence from the steady-state window.
const scaleSettle = 5 * time.Second

// scaleLabel marks what one sub-benchmark created, for listing and cleanup.
const scaleLabel = "bench.gitsync.dev/scale"

func BenchmarkAgentScale(b *testing.B) {
	dir := b.TempDir()
	bin := buildAgent(b, dir)
	start := time.Now()
	repos := makeScaleRepos(b, dir, *scaleSyncs, *scaleObjects)
	b.Logf("%d repositories of %d objects made in %v", len(repos), *scaleObjects, time.Since(start).Round(time.Millisecond))
	c := gitsyncClient(b)
	for _, s := range strings.Split(*scaleConcurrent, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			b.Fatalf("-scale.concurrent %q: want positive integers", *scaleConcurrent)
		}
		b.Run(fmt.Sprintf("concurrent-%d", n), func(b *testing.B) { benchAgentScale(b, c, bin, repos, n) })
	}
	if *scaleFloor {
		b.Run("floor", func(b *testing.B) { benchScaleFloor(b, *scaleSyncs, *scaleObjects) })
	}
}

func gitsyncClient(b *testing.B) client.WithWatch {
	b.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := gitsyncv1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// scaleSnapshot is the agent's state at one moment.
type scaleSnapshot struct {
	at       time.Time
	rss, hwm float64
	// anon and file split rss: heap, stacks and runtime vs mapped binary.
	anon, file float64
	cpu        time.Duration
	prom       promSample
	// gitsyncRV is each GitSync's resourceVersion (a status write changes it).
	gitsyncRV map[types.NamespacedName]string
}

func benchAgentScale(b *testing.B, c client.WithWatch, bin string, repos []scaleRepo, concurrent int) {
	ctx := context.Background()
	run := "c" + strconv.Itoa(concurrent) + "-" + utilrand.String(4)
	namespaces := make([]string, len(repos))
	for i := range namespaces {
		namespaces[i] = fmt.Sprintf("scale-%s-%03d", run, i)
	}
	createNamespaces(b, namespaces, run)
	b.Cleanup(func() { cleanupScale(b, c, namespaces) }) // after the agent stopped (cleanups run last-in first-out)
	agent := startAgent(b, bin, env.Kubeconfig, concurrent)
	pid := agent.cmd.Process.Pid
	cp := controlPlanePIDs()
	// The first List also teaches c's REST mapper the GitSync kind, so the
	// timed creates do not wait for discovery.
	idle := snapshot(b, c, agent, run, true)
	warmGitSyncCreate(b, c, namespaces[0])

	want := map[types.NamespacedName]string{}
	for i, ns := range namespaces {
		want[types.NamespacedName{Namespace: ns, Name: "app"}] = repos[i].commit
	}
	readyCh := make(chan map[types.NamespacedName]time.Time, 1)
	errCh := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, *scaleTimeout)
	defer cancel()
	go func() {
		ready, err := waitConverged(wctx, c, run, want)
		readyCh <- ready
		errCh <- err
	}()
	cpBefore := map[string]time.Duration{}
	for name, p := range cp {
		cpBefore[name] = procCPU(p)
	}
	profDone := make(chan struct{})
	b.ResetTimer()
	t0 := time.Now()
	go func() {
		defer close(profDone)
		agent.saveProfile(b, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(scaleCPUProfile.Seconds())), fmt.Sprintf("cpu-c%d.pprof", concurrent))
	}()
	apiProfDone := make(chan struct{})
	go func() {
		defer close(apiProfDone)
		saveAPIServerProfile(b, *scaleCPUProfile, fmt.Sprintf("apiserver-cpu-c%d.pprof", concurrent))
	}()
	createGitSyncs(b, c, namespaces, repos, run)
	created := time.Since(t0)
	ready, err := <-readyCh, <-errCh
	b.StopTimer()
	converged := time.Since(t0)
	if err != nil {
		n, first := agent.logErrors()
		b.Fatalf("%d of %d GitSyncs converged in %v: %v\nagent log errors: %d, first: %s\nlast agent log lines:\n%s",
			len(ready), len(want), converged.Round(time.Second), err, n, first, agent.logTail(30))
	}
	cpCPU := map[string]time.Duration{}
	for name, p := range cp {
		cpCPU[name] = procCPU(p) - cpBefore[name]
	}
	atConv := snapshot(b, c, agent, run, true)
	agent.saveProfile(b, "/debug/pprof/heap?gc=1", fmt.Sprintf("heap-c%d.pprof", concurrent))
	// Requests the agent finished just before the last status write was
	// seen (its counters lag the watch event) and Events it sends
	// asynchronously land in a short settle window, not in steady state.
	time.Sleep(scaleSettle)
	settled := snapshot(b, c, agent, run, true)
	time.Sleep(*scaleSteady)
	steady := snapshot(b, c, agent, run, true)
	<-profDone
	<-apiProfDone
	agent.stop()
	rs := measureRestart(b, c, bin, concurrent, run, steady.gitsyncRV)

	times := slices.SortedFunc(maps.Values(ready), time.Time.Compare)
	at := func(q float64) float64 { return times[int(q*float64(len(times)-1))].Sub(t0).Seconds() }
	steadyReq := diffCounts(steady.prom.requests, settled.prom.requests)
	settleReq := diffCounts(settled.prom.requests, atConv.prom.requests)
	convReq := diffCounts(atConv.prom.requests, idle.prom.requests)
	changed := 0
	for k, rv := range steady.gitsyncRV {
		if settled.gitsyncRV[k] != rv {
			changed++
		}
	}
	logErrs, firstErr := agent.logErrors()

	b.ReportMetric(converged.Seconds(), "s-converge")
	b.ReportMetric(at(0.5), "s-p50-ready")
	b.ReportMetric(float64(len(want)*(*scaleObjects))/converged.Seconds(), "objects/s")
	b.ReportMetric(idle.rss, "MiB-rss-idle")
	b.ReportMetric(atConv.rss, "MiB-rss-converged")
	b.ReportMetric(atConv.hwm, "MiB-hwm")
	b.ReportMetric(steady.rss, "MiB-rss-steady")
	b.ReportMetric(atConv.prom.heapInuse/(1<<20), "MiB-heap-converged")
	b.ReportMetric(steady.prom.heapInuse/(1<<20), "MiB-heap-steady")
	b.ReportMetric((atConv.cpu - idle.cpu).Seconds(), "agent-cpu-s")
	b.ReportMetric(cpCPU["kube-apiserver"].Seconds(), "apiserver-cpu-s")
	b.ReportMetric(cpCPU["etcd"].Seconds(), "etcd-cpu-s")
	b.ReportMetric(atConv.prom.total(convReq), "converge-requests")
	// Steady requests are reads and writes: informers re-opening their
	// watches (every 5–10 minutes each) are not work about objects.
	steadyKinds := diffCounts(steady.prom.kinds, settled.prom.kinds)
	b.ReportMetric(steadyKinds["read"]+steadyKinds["review"]+steadyKinds["write"], "steady-requests")
	b.ReportMetric(float64(changed), "steady-status-writes")
	b.ReportMetric(rs.firstReconcile.Seconds(), "s-start-first-reconcile")
	b.ReportMetric(rs.kinds["review"], "restart-reviews")
	b.ReportMetric(rs.kinds["write"], "restart-writes")
	b.ReportMetric(float64(rs.statusWrites), "restart-status-writes")

	b.Logf("concurrent=%d: GitSyncs created in %v; first Ready %.1fs, p50 %.1fs, p90 %.1fs, last %.1fs",
		concurrent, created.Round(time.Millisecond), at(0), at(0.5), at(0.9), at(1))
	b.Logf("requests by method: during convergence %v; in the %v after %v; in %v of steady state %v (by kind %v)",
		convReq, scaleSettle, settleReq, *scaleSteady, steadyReq, steadyKinds)
	b.Logf("reconciles by result: during convergence %v; in the %v after %v; in steady state %v",
		diffCounts(atConv.prom.reconciles, idle.prom.reconciles), scaleSettle,
		diffCounts(settled.prom.reconciles, atConv.prom.reconciles), diffCounts(steady.prom.reconciles, settled.prom.reconciles))
	b.Logf("agent pid %d: RSS idle %.0f MiB, converged %.0f MiB (peak %.0f), steady %.0f MiB; Go heap in use %.0f → %.0f MiB; CPU %.1fs converging, %.2fs steady",
		pid, idle.rss, atConv.rss, atConv.hwm, steady.rss, atConv.prom.heapInuse/(1<<20), steady.prom.heapInuse/(1<<20),
		(atConv.cpu - idle.cpu).Seconds(), (steady.cpu - atConv.cpu).Seconds())
	b.Logf("agent RSS anonymous / file-backed (the binary's pages): idle %.0f / %.0f MiB, converged %.0f / %.0f, steady %.0f / %.0f",
		idle.anon, idle.file, atConv.anon, atConv.file, steady.anon, steady.file)
	b.Logf("control plane CPU during convergence: %v (wall %v, 2 cores = %v)", cpCPU, converged.Round(time.Millisecond), 2*converged.Round(time.Millisecond))
	b.Logf("agent log: %d error lines; first: %.300s", logErrs, firstErr)
	b.Logf("restart over the converged GitSyncs: first reconcile %.2fs after exec, all %d reconciled after %.1fs; requests by kind %v, by method %v; %d GitSync status writes",
		rs.firstReconcile.Seconds(), len(want), rs.allReconciled.Seconds(), rs.kinds, rs.methods, rs.statusWrites)
}

// restartStats is what a restarted agent did over converged GitSyncs.
type restartStats struct {
	// firstReconcile and allReconciled are from the exec of the new
	// process to its first finished reconcile, and to as many as there
	// are GitSyncs (the start-up listing queues each once).
	firstReconcile, allReconciled time.Duration
	// kinds and methods count its API requests (gitsync_api_requests_total,
	// rest_client_requests_total) until scaleSettle after allReconciled.
	kinds, methods map[string]float64
	statusWrites   int // GitSyncs whose resourceVersion changed
}

// measureRestart starts a second agent over the GitSyncs the stopped one
// converged (their resourceVersions in rvs) and measures its start-up and
// what it sends until every GitSync was reconciled once.
func measureRestart(b *testing.B, c client.WithWatch, bin string, concurrent int, run string, rvs map[types.NamespacedName]string) restartStats {
	b.Helper()
	a := launchAgent(b, bin, env.Kubeconfig, concurrent)
	defer a.stop()
	profDone := make(chan struct{})
	go func() { // the restarted agent's start-up, with GITSYNC_BENCH_PPROF_DIR
		defer close(profDone)
		a.saveProfileWhenUp(b, "/debug/pprof/profile?seconds=5", "restart-cpu.pprof")
	}()
	defer func() { <-profDone }()
	var rs restartStats
	deadline := time.Now().Add(*scaleTimeout)
	for {
		select {
		case <-a.done:
			b.Fatalf("restarted gitsync run exited:\n%s", a.logTail(40))
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			b.Fatalf("restarted agent did not reconcile %d GitSyncs within %v:\n%s", len(rvs), *scaleTimeout, a.logTail(40))
		}
		p, err := scrapeAgent(a.metrics)
		if err != nil {
			continue // not listening yet
		}
		n := p.total(p.reconciles)
		if n > 0 && rs.firstReconcile == 0 {
			rs.firstReconcile = time.Since(a.started)
		}
		if n >= float64(len(rvs)) {
			rs.allReconciled = time.Since(a.started)
			break
		}
	}
	time.Sleep(scaleSettle) // asynchronous Events and counters of the last reconciles
	p, err := scrapeAgent(a.metrics)
	if err != nil {
		b.Fatal(err)
	}
	rs.kinds, rs.methods = p.kinds, p.requests
	if pprofDir != "" { // the restarted agent's log, for its start-up timeline
		if log, err := os.ReadFile(a.logPath); err == nil {
			_ = os.WriteFile(filepath.Join(pprofDir, "restart.log"), log, 0o644)
		}
	}
	after := snapshot(b, c, a, run, true)
	for k, rv := range after.gitsyncRV {
		if rvs[k] != rv {
			rs.statusWrites++
		}
	}
	return rs
}

// snapshot reads the agent's memory, CPU and metrics (and, with gitsyncs,
// the GitSyncs' resourceVersions).
func snapshot(b *testing.B, c client.Client, a *scaleAgent, run string, gitsyncs bool) scaleSnapshot {
	b.Helper()
	s := scaleSnapshot{at: time.Now()}
	m, err := procStatus(a.cmd.Process.Pid)
	if err != nil {
		b.Fatalf("agent memory: %v", err)
	}
	s.rss, s.hwm, s.anon, s.file = m["VmRSS:"], m["VmHWM:"], m["RssAnon:"], m["RssFile:"]
	s.cpu = procCPU(a.cmd.Process.Pid)
	if s.prom, err = scrapeAgent(a.metrics); err != nil {
		b.Fatal(err)
	}
	if gitsyncs {
		list := &gitsyncv1.GitSyncList{}
		if err := c.List(context.Background(), list, client.MatchingLabels{scaleLabel: run}); err != nil {
			b.Fatal(err)
		}
		s.gitsyncRV = map[types.NamespacedName]string{}
		for _, gs := range list.Items {
			s.gitsyncRV[client.ObjectKeyFromObject(&gs)] = gs.ResourceVersion
		}
	}
	return s
}

func createNamespaces(b *testing.B, names []string, run string) {
	b.Helper()
	g := errgroup.Group{}
	g.SetLimit(8)
	for _, name := range names {
		g.Go(func() error {
			return env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{scaleLabel: run}}})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// warmGitSyncCreate sends one dry-run create of a GitSync: the first
// create of the kind after its CRD was installed takes ~2 s, which is not
// the agent's to count.
func warmGitSyncCreate(b *testing.B, c client.Client, ns string) {
	b.Helper()
	gs := &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: "warm-up", Namespace: ns},
		Spec:       gitsyncv1.GitSyncSpec{Source: gitsyncv1.GitSource{URL: "file:///nonexistent", Ref: gitsyncv1.GitRef{Branch: "main"}}},
	}
	if err := c.Create(context.Background(), gs, client.DryRunAll); err != nil {
		b.Fatalf("dry-run create of a GitSync: %v", err)
	}
}

// createGitSyncs creates one GitSync "app" per namespace; the interval is
// long so polling does not help convergence.
func createGitSyncs(b *testing.B, c client.Client, namespaces []string, repos []scaleRepo, run string) {
	b.Helper()
	g := errgroup.Group{}
	g.SetLimit(8)
	for i, ns := range namespaces {
		g.Go(func() error {
			return c.Create(context.Background(), &gitsyncv1.GitSync{
				ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns, Labels: map[string]string{scaleLabel: run}},
				Spec: gitsyncv1.GitSyncSpec{
					Source:   gitsyncv1.GitSource{URL: repos[i].url, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: "deploy"},
					Interval: metav1.Duration{Duration: 10 * time.Minute},
					Prune:    true,
					Wait:     true,
				},
			})
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

// waitConverged lists and watches the run's GitSyncs until every key of want
// is Ready at its commit for its current generation, and returns when each
// got there. A closed watch is resumed with a fresh list.
func waitConverged(ctx context.Context, c client.WithWatch, run string, want map[types.NamespacedName]string) (map[types.NamespacedName]time.Time, error) {
	ready := map[types.NamespacedName]time.Time{}
	see := func(gs *gitsyncv1.GitSync) {
		key := client.ObjectKeyFromObject(gs)
		commit, ok := want[key]
		if _, done := ready[key]; !ok || done {
			return
		}
		cond := meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionReady)
		if cond != nil && cond.Status == metav1.ConditionTrue && gs.Status.ObservedGeneration == gs.Generation &&
			strings.Contains(gs.Status.LastAppliedRevision, commit) {
			ready[key] = time.Now()
		}
	}
	sel := client.MatchingLabels{scaleLabel: run}
	for len(ready) < len(want) {
		list := &gitsyncv1.GitSyncList{}
		if err := c.List(ctx, list, sel); err != nil {
			return ready, err
		}
		for i := range list.Items {
			see(&list.Items[i])
		}
		w, err := c.Watch(ctx, &gitsyncv1.GitSyncList{}, sel, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			return ready, err
		}
		for ev := range w.ResultChan() {
			if gs, ok := ev.Object.(*gitsyncv1.GitSync); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				see(gs)
			}
			if len(ready) == len(want) {
				break
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return ready, err
		}
	}
	return ready, nil
}

// cleanupScale removes what one sub-benchmark made, with the agent stopped:
// GitSync finalizers are dropped (nobody would prune), the managed objects
// deleted by collection, then the namespaces (which stay Terminating, as the
// control plane has no namespace controller, but hold nothing).
func cleanupScale(b *testing.B, c client.Client, namespaces []string) {
	ctx := context.Background()
	g := errgroup.Group{}
	g.SetLimit(8)
	for _, ns := range namespaces {
		g.Go(func() error {
			list := &gitsyncv1.GitSyncList{}
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return err
			}
			for i := range list.Items {
				gs := &list.Items[i]
				if err := c.Patch(ctx, gs, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
				if err := c.Delete(ctx, gs); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &corev1.ServiceAccount{}} {
				if err := c.DeleteAllOf(ctx, obj, client.InNamespace(ns)); err != nil {
					return err
				}
			}
			svcs := &corev1.ServiceList{}
			if err := c.List(ctx, svcs, client.InNamespace(ns)); err != nil {
				return err
			}
			for i := range svcs.Items {
				if err := c.Delete(ctx, &svcs.Items[i]); err != nil && !apierrors.IsNotFound(err) {
					return err
				}
			}
			return c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		})
	}
	if err := g.Wait(); err != nil {
		b.Errorf("cleanup: %v", err)
	}
}
