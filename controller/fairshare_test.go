package controller_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gitsyncagent "gitsync.dev/gitsync/agent"
	v1 "gitsync.dev/gitsync/api/v1alpha1"
	"gitsync.dev/gitsync/source/budget"
	"gitsync.dev/gitsync/source/render"
	"gitsync.dev/gitsync/source/sandbox"
	"gitsync.dev/gitsync/source/sandbox/sandboxtest"
)

// rangeBomb is the CPU bomb of issue 24: it spins until it is killed.
const rangeBomb = `{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}`

// renders counts the renders of each owner (namespace) that started and
// that ended.
type renders struct {
	mu             sync.Mutex
	started, ended map[string]int
}

func (r *renders) note(owner string, start bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if start {
		r.started[owner]++
	} else {
		r.ended[owner]++
	}
}

func (r *renders) count(owner string) (started, ended int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started[owner], r.ended[owner]
}

// sandboxed is a revision cache renderer running kustomize and Helm in
// sandbox children, as gitsync run does, noting each render in log; every
// render still running is stopped (its child killed) when the test ends.
func sandboxed(t *testing.T, opts sandbox.Options, log *renders) gitsyncagent.Renderer {
	opts.Executable = sandboxtest.Child(t)
	sb, err := sandbox.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	testCtx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return renderFunc(func(ctx context.Context, root, path string, ropts render.Options) (*render.Rendered, error) {
		owner := budget.OwnerOf(ctx)
		log.note(owner, true)
		defer log.note(owner, false)
		ctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			select {
			case <-testCtx.Done():
				stop()
			case <-ctx.Done():
			}
		}()
		return sb.Render(ctx, root, path, ropts)
	})
}

// renderFunc is a function as an agent.Renderer.
type renderFunc func(ctx context.Context, root, path string, opts render.Options) (*render.Rendered, error)

func (f renderFunc) Render(ctx context.Context, root, path string, opts render.Options) (*render.Rendered, error) {
	return f(ctx, root, path, opts)
}

// TestFairShareAppliesAnotherTenantsCommit: with two workers, tenant a's
// three charts that never finish rendering hold one worker (its share) and
// wait for it without holding another, so tenant b's GitSync is applied,
// and then b's next commit, while a's first render still runs: no render of
// a ended before b's commits were applied.
//
// Checked with Options.NamespaceShare set to no limit: a's second GitSync
// then holds the other worker (waiting for a's render slot), and b is not
// applied until a's renders time out, after the wait here gives up.
func TestFairShareAppliesAnotherTenantsCommit(t *testing.T) {
	c := setup(t)
	nsA, nsB := env.Namespace(t), env.Namespace(t)
	log := &renders{started: map[string]int{}, ended: map[string]int{}}
	opts := sandbox.DefaultOptions()
	opts.Limits = budget.Limits{CPU: time.Minute, Wall: time.Minute}
	a := startAgent(t, agentOptions{namespace: nsA, alsoNamespaces: []string{nsB}, concurrent: 2, fairShare: true,
		render: sandboxed(t, opts, log)})
	bombs := newRepo(t)
	files := map[string]string{}
	for i := 1; i <= 3; i++ {
		files[fmt.Sprintf("bomb%d/Chart.yaml", i)] = fmt.Sprintf("apiVersion: v2\nname: bomb%d\nversion: 0.1.0\n", i)
		files[fmt.Sprintf("bomb%d/templates/main.yaml", i)] = rangeBomb
	}
	bombs.commit(files)
	for i := 1; i <= 3; i++ {
		gs := newGitSync(nsA, fmt.Sprintf("bomb%d", i), bombs.url(), func(g *v1.GitSync) { g.Spec.Source.Path = fmt.Sprintf("bomb%d", i) })
		if err := c.Create(context.Background(), gs); err != nil {
			t.Fatal(err)
		}
	}
	// a's share is one worker: one bomb renders, the other two wait for a
	// free slot of a's (without the share, the second holds a worker).
	eventually(t, "tenant a holds its share", func(context.Context) (bool, error) {
		started, _ := log.count(nsA)
		return started >= 1 && (a.rec.FairWaiting() >= 2 || started >= 2), nil
	})

	app := newRepo(t)
	app.commit(map[string]string{"deploy/cm.yaml": configMap("app", "v1")})
	gs := newGitSync(nsB, "app", app.url())
	if err := c.Create(context.Background(), gs); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, client.ObjectKeyFromObject(gs), v1.ConditionReady, metav1.ConditionTrue, nil)
	if _, ended := log.count(nsA); ended != 0 {
		t.Fatalf("%d of tenant a's renders ended before tenant b's GitSync was applied, want b applied while a's bombs run", ended)
	}

	app.commit(map[string]string{"deploy/cm.yaml": configMap("app", "v2")})
	request(t, c, client.ObjectKeyFromObject(gs), "after-v2")
	eventually(t, "tenant b's new commit applied", func(ctx context.Context) (bool, error) {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: nsB, Name: "app"}, cm); err != nil {
			return false, nil
		}
		return cm.Data["value"] == "v2", nil
	})
	if started, ended := log.count(nsA); ended != 0 || started < 1 {
		t.Errorf("tenant a's renders: %d started, %d ended when b's new commit was applied; want b's commit applied while a's first bomb runs", started, ended)
	}
}
