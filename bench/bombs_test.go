package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncv1 "gitsync.dev/gitsync/api/v1alpha1"
)

// The bombs of issue 24, each one GitSync of tenant a.
var bombFiles = map[string]string{
	"repeat/Chart.yaml":          "apiVersion: v2\nname: repeat\nversion: 0.1.0\n",
	"repeat/templates/main.yaml": `{{ repeat 400 (repeat 1048576 "x") }}`,
	"subst/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: subst\ndata:\n  v: \"" +
		strings.Repeat("${BIG}", 700) + "\"\n",
}

// rangeBombs is how many charts of nested `range until 100000` tenant a has.
const rangeBombs = 5

func init() {
	for i := 1; i <= rangeBombs; i++ {
		bombFiles[fmt.Sprintf("range%d/Chart.yaml", i)] = fmt.Sprintf("apiVersion: v2\nname: range%d\nversion: 0.1.0\n", i)
		bombFiles[fmt.Sprintf("range%d/templates/main.yaml", i)] = `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`
	}
}

// BenchmarkRenderBombs runs the real agent (4 workers, the default render
// limits but a 10 s deadline and a CPU limit above it, so the range bombs
// time out rather than run out of CPU) with tenant a's bombs (a 1 MB
// variable used 700 times, `repeat 400 (repeat 1048576 "x")`, five charts
// of nested `range until 100000`) and records: the peak RSS of the agent
// and its render children together (sampled every 50 ms; the children's
// file-backed pages are the agent's binary, counted twice here), how soon
// tenant b's GitSync and then b's new commit are applied while a's bombs
// render, and the CPU the agent's process tree uses once every bomb has
// timed out.
func BenchmarkRenderBombs(b *testing.B) {
	dir := b.TempDir()
	bin := buildAgent(b, dir)
	agent := startAgent(b, bin, env.Kubeconfig, 4, "--render-timeout", "10s", "--render-cpu", "1m")
	c := gitsyncClient(b)
	ctx := context.Background()
	peak := sampleTree(agent.cmd.Process.Pid)
	defer peak.stop()

	nsA, nsB := "bombs-a", "bombs-b"
	createNamespaces(b, []string{nsA, nsB}, "bombs")
	b.Cleanup(func() { cleanupScale(b, c, []string{nsA, nsB}) })
	bombsURL, _ := benchRepo(b, dir, "bombs", bombFiles)
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: nsA}, Data: map[string]string{"BIG": strings.Repeat("x", 1_000_000)}}
	if err := c.Create(ctx, big); err != nil {
		b.Fatal(err)
	}
	var bombs []client.ObjectKey
	for _, path := range bombPaths() {
		gs := benchGitSync(nsA, path, bombsURL, path)
		if path == "subst" {
			gs.Spec.SubstituteFrom = []gitsyncv1.SubstituteReference{{Kind: "ConfigMap", Name: "big"}}
		}
		if err := c.Create(ctx, gs); err != nil {
			b.Fatal(err)
		}
		bombs = append(bombs, client.ObjectKeyFromObject(gs))
	}
	for peak.children() == 0 { // a bomb renders in a child
		time.Sleep(20 * time.Millisecond)
	}

	b.ResetTimer()
	appURL, work := benchRepo(b, dir, "app", map[string]string{"deploy/cm.yaml": latencyCM(0, 1)})
	app := benchGitSync(nsB, "app", appURL, "deploy")
	start := time.Now()
	if err := c.Create(ctx, app); err != nil {
		b.Fatal(err)
	}
	first := strings.TrimSpace(runGit(b, work, nil, "rev-parse", "HEAD"))
	at, err := waitRevision(ctx, c, client.ObjectKeyFromObject(app), first, 2*time.Minute)
	if err != nil {
		b.Fatalf("tenant b's GitSync not applied: %v\n%s", err, agent.logTail(20))
	}
	firstApply := at.Sub(start)
	commit := commitPush(b, work, map[string]string{"deploy/cm.yaml": latencyCM(0, 2)})
	start = time.Now()
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
		b.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&app.ObjectMeta, gitsyncv1.AnnotationRequestedAt, commit)
	if err := c.Update(ctx, app); err != nil {
		b.Fatal(err)
	}
	if at, err = waitRevision(ctx, c, client.ObjectKeyFromObject(app), commit, 2*time.Minute); err != nil {
		b.Fatalf("tenant b's new commit not applied: %v\n%s", err, agent.logTail(20))
	}
	newCommit := at.Sub(start)
	stalledThen := countStalled(b, c, bombs)
	b.StopTimer()

	waitStalled(b, c, bombs, 10*time.Minute)
	idle := treeCPU(agent.cmd.Process.Pid)
	time.Sleep(3 * time.Second) // the window measured, not a settle wait
	idleCPU := treeCPU(agent.cmd.Process.Pid) - idle
	rss, anon := peak.stop()
	b.ReportMetric(rss, "peak-tree-rss-MiB")
	b.ReportMetric(anon, "peak-tree-anon-MiB")
	b.ReportMetric(peak.agentAnon, "peak-agent-anon-MiB")
	b.ReportMetric(peak.childAnon, "peak-children-anon-MiB")
	b.ReportMetric(firstApply.Seconds(), "s-b-first-apply")
	b.ReportMetric(newCommit.Seconds(), "s-b-new-commit")
	b.ReportMetric(idleCPU.Seconds()/3, "cores-after-timeout")
	b.Logf("tenant b applied %v after creation, its new commit %v after the push, while %d of %d bombs had stalled; peak RSS %.0f MiB (anonymous %.0f MiB), at most %d children; %.3f cores in the 3 s after all bombs stalled",
		firstApply.Round(time.Millisecond), newCommit.Round(time.Millisecond), stalledThen, len(bombs), rss, anon, peak.maxChildren(), idleCPU.Seconds()/3)
	for _, key := range bombs {
		gs := &gitsyncv1.GitSync{}
		if err := c.Get(ctx, key, gs); err == nil {
			if cond := meta.FindStatusCondition(gs.Status.Conditions, gitsyncv1.ConditionStalled); cond != nil {
				b.Logf("%s: %s: %.160s", key.Name, cond.Reason, cond.Message)
			}
		}
	}
}

func bombPaths() []string {
	paths := []string{"subst", "repeat"}
	for i := 1; i <= rangeBombs; i++ {
		paths = append(paths, fmt.Sprintf("range%d", i))
	}
	return paths
}

// benchRepo makes a bare repository holding files on main and a work copy
// pushing to it; it returns the file:// URL and the work copy.
func benchRepo(b *testing.B, dir, name string, files map[string]string) (url, work string) {
	b.Helper()
	bare := filepath.Join(dir, name+".git")
	work = filepath.Join(dir, name+"-work")
	runGit(b, "", nil, "init", "-q", "--bare", "-b", "main", bare)
	runGit(b, "", nil, "init", "-q", "-b", "main", work)
	runGit(b, work, nil, "remote", "add", "origin", bare)
	commitPush(b, work, files)
	return "file://" + bare, work
}

func benchGitSync(ns, name, url, path string) *gitsyncv1.GitSync {
	return &gitsyncv1.GitSync{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: gitsyncv1.GitSyncSpec{
			Source:   gitsyncv1.GitSource{URL: url, Ref: gitsyncv1.GitRef{Branch: "main"}, Path: path},
			Interval: metav1.Duration{Duration: time.Hour},
			Prune:    true,
		},
	}
}

func countStalled(b *testing.B, c client.Client, keys []client.ObjectKey) int {
	b.Helper()
	n := 0
	for _, key := range keys {
		gs := &gitsyncv1.GitSync{}
		if err := c.Get(context.Background(), key, gs); err != nil {
			b.Fatal(err)
		}
		if meta.IsStatusConditionTrue(gs.Status.Conditions, gitsyncv1.ConditionStalled) {
			n++
		}
	}
	return n
}

func waitStalled(b *testing.B, c client.Client, keys []client.ObjectKey, timeout time.Duration) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	for countStalled(b, c, keys) < len(keys) {
		if time.Now().After(deadline) {
			b.Fatalf("not every bomb stalled after %v", timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// treeSampler samples the memory of a process and its children.
type treeSampler struct {
	mu sync.Mutex
	// Peaks, in MiB: of the whole tree, and of the agent and its children
	// apart.
	rss, anon, agentAnon, childAnon float64
	kids, maxKids                   int
	done                            chan struct{}
	once                            sync.Once
	wg                              sync.WaitGroup
}

func sampleTree(pid int) *treeSampler {
	s := &treeSampler{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			s.sample(pid)
			select {
			case <-s.done:
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *treeSampler) sample(pid int) {
	var rss, anon, agentAnon float64
	pids := append([]int{pid}, childPIDs(pid)...)
	for i, p := range pids {
		if m, err := procStatus(p); err == nil {
			rss += m["VmRSS:"]
			anon += m["RssAnon:"]
			if i == 0 {
				agentAnon = m["RssAnon:"]
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rss, s.anon = max(s.rss, rss), max(s.anon, anon)
	s.agentAnon, s.childAnon = max(s.agentAnon, agentAnon), max(s.childAnon, anon-agentAnon)
	s.kids = len(pids) - 1
	s.maxKids = max(s.maxKids, s.kids)
}

func (s *treeSampler) children() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kids
}

func (s *treeSampler) maxChildren() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxKids
}

// stop ends the sampling and returns the peaks, in MiB.
func (s *treeSampler) stop() (rss, anon float64) {
	s.once.Do(func() { close(s.done) })
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rss, s.anon
}

// childPIDs lists the processes whose parent is pid.
func childPIDs(pid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		s := string(data)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// treeCPU is the CPU time of pid and its live children.
func treeCPU(pid int) time.Duration {
	total := procCPU(pid)
	for _, p := range childPIDs(pid) {
		total += procCPU(p)
	}
	return total
}
