package engine_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"gitsync.dev/gitsync/apply"
	"gitsync.dev/gitsync/engine"
	"gitsync.dev/gitsync/internal/testenv"
	"gitsync.dev/gitsync/inventory"
	"gitsync.dev/gitsync/object"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, testenv.Options{}, &env))
}

// owner is the sync every test runs as; its GitSync lives in the test's
// namespace.
const owner = "app"

// options are the engine's options for the sync owner in ns: an applier
// stamping its owner labels, a direct watching client, pruning on.
func options(t *testing.T, ns string) engine.Options {
	t.Helper()
	aopts := apply.DefaultOptions()
	aopts.DefaultNamespace = ns
	aopts.OwnerLabels = object.OwnerLabels(owner, ns)
	a, err := apply.New(env.Config, nil, aopts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	opts := engine.DefaultOptions()
	opts.Applier, opts.Client = a, c
	opts.PruneOptions.Name, opts.PruneOptions.Namespace = owner, ns
	opts.PruneOptions.Timeout = 30 * time.Second
	return opts
}

// store is the ConfigMap inventory of the sync owner in ns.
func store(ns string) inventory.Store {
	return inventory.NewConfigMapStore(env.Client, ns, owner)
}

// failingSave wraps a Store; Save succeeds okSaves times, then fails.
type failingSave struct {
	inventory.Store
	okSaves int
	saves   int
}

func (s *failingSave) Save(ctx context.Context, inv *inventory.Inventory) error {
	s.saves++
	if s.saves > s.okSaves {
		return errSaveRefused
	}
	return s.Store.Save(ctx, inv)
}

var errSaveRefused = errors.New("save refused by the test")

func configMap(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["data"] = map[string]any{"k": name}
	return u
}

func cmID(ns, name string) object.ID {
	return object.ID{Kind: "ConfigMap", Namespace: ns, Name: name}
}

// createCM creates a ConfigMap with labels outside the engine.
func createCM(t *testing.T, ns, name string, labels map[string]string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	if err := env.Client.Create(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
	return cm
}

// live returns the ConfigMap ns/name, nil when it does not exist (or is
// being deleted).
func live(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if cm.DeletionTimestamp != nil {
		return nil
	}
	return cm
}

// load returns the stored inventory.
func load(t *testing.T, s inventory.Store) *inventory.Inventory {
	t.Helper()
	inv, err := s.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// inventoryRV is the resourceVersion of the inventory ConfigMap.
func inventoryRV(t *testing.T, ns string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: inventory.ConfigMapPrefix + owner}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.ResourceVersion
}

// writePreviousFormat stores entries in the inventory ConfigMap as gitsync
// wrote them before pending entries existed: JSON objects with id, uid and
// version only, gzip-compressed.
func writePreviousFormat(t *testing.T, ns string, entries []inventory.Entry) {
	t.Helper()
	type id struct {
		Group     string `json:"group"`
		Kind      string `json:"kind"`
		Namespace string `json:"namespace,omitempty"`
		Name      string `json:"name"`
	}
	type entry struct {
		ID      id     `json:"id"`
		UID     string `json:"uid"`
		Version string `json:"version,omitempty"`
	}
	var old struct {
		Entries []entry `json:"entries"`
	}
	for _, e := range entries {
		old.Entries = append(old.Entries, entry{ID: id(e.ID), UID: string(e.UID), Version: e.Version})
	}
	raw, err := json.Marshal(old)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "pending") {
		t.Fatalf("previous format carries a pending marker: %s", raw)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: inventory.ConfigMapPrefix + owner}, cm); err != nil {
		t.Fatal(err)
	}
	cm.BinaryData = map[string][]byte{inventory.ConfigMapKey: buf.Bytes()}
	if err := env.Client.Update(context.Background(), cm); err != nil {
		t.Fatal(err)
	}
}
