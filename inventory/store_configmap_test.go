package inventory

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

func TestConfigMapStoreRoundTrip(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	store := NewConfigMapStore(env.Client, ns, "web")

	got, err := store.Load(ctx)
	if err != nil || got.Len() != 0 {
		t.Fatalf("Load before any Save = %v, %v; want an empty inventory", got, err)
	}
	for _, n := range []int{3, 5000, 1} {
		inv := largeInventory(n)
		if err := store.Save(ctx, inv); err != nil {
			t.Fatalf("Save %d entries: %v", n, err)
		}
		got, err := store.Load(ctx)
		if err != nil {
			t.Fatalf("Load %d entries: %v", n, err)
		}
		if diff := cmp.Diff(inv.Entries, got.Entries); diff != "" {
			t.Errorf("round trip of %d entries (-want +got):\n%s", n, diff)
		}
	}

	stored := &corev1.ConfigMap{}
	key := client.ObjectKey{Namespace: ns, Name: ConfigMapPrefix + "web"}
	if err := env.Client.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	if stored.Labels[v1.LabelInventory] != "web" || stored.Annotations[v1.AnnotationInventoryEntries] != "1" {
		t.Errorf("ConfigMap labels %v, annotations %v; want %s=web and %s=1", stored.Labels, stored.Annotations, v1.LabelInventory, v1.AnnotationInventoryEntries)
	}
	// Saving what is stored writes nothing.
	current, _ := store.Load(ctx)
	if err := store.Save(ctx, current); err != nil {
		t.Fatal(err)
	}
	again := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, key, again); err != nil {
		t.Fatal(err)
	}
	if again.ResourceVersion != stored.ResourceVersion {
		t.Errorf("unchanged Save wrote: resourceVersion %s -> %s", stored.ResourceVersion, again.ResourceVersion)
	}
}

// TestConfigMapStoreLargeInventory: several thousand entries stay far below
// the ConfigMap size limit once compressed.
func TestConfigMapStoreLargeInventory(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	inv := largeInventory(8000)
	if err := NewConfigMapStore(env.Client, ns, "big").Save(ctx, inv); err != nil {
		t.Fatalf("Save: %v", err)
	}
	stored := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ConfigMapPrefix + "big"}, stored); err != nil {
		t.Fatal(err)
	}
	size := len(stored.BinaryData[ConfigMapKey])
	if size > MaxConfigMapBytes {
		t.Errorf("8000 entries stored as %d bytes, more than %d", size, MaxConfigMapBytes)
	}
	t.Logf("8000 entries: %d bytes compressed", size)
	got, err := NewConfigMapStore(env.Client, ns, "big").Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inv.Entries, got.Entries); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// TestConfigMapStoreLeavesOthersAlone: a ConfigMap with the inventory's name
// but not its label is neither read nor overwritten.
func TestConfigMapStoreLeavesOthersAlone(t *testing.T) {
	ns := env.Namespace(t)
	ctx := context.Background()
	other := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: ConfigMapPrefix + "web"},
		Data:       map[string]string{"keep": "me"},
	}
	if err := env.Client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	store := NewConfigMapStore(env.Client, ns, "web")
	if _, err := store.Load(ctx); err == nil || !strings.Contains(err.Error(), "is not the inventory") {
		t.Errorf("Load of a foreign ConfigMap = %v, want an error", err)
	}
	if err := store.Save(ctx, largeInventory(2)); err == nil {
		t.Error("Save over a foreign ConfigMap succeeded")
	}
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(other), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"keep": "me"}, got.Data); diff != "" || got.BinaryData != nil {
		t.Errorf("foreign ConfigMap changed (-want +got):\n%s", diff)
	}
}

func TestConfigMapStoreRejectsBadNames(t *testing.T) {
	for _, tt := range []struct{ ns, name string }{{"", "web"}, {"ns", ""}, {"ns", "Web_App"}, {"ns", strings.Repeat("a", 64)}} {
		if _, err := NewConfigMapStore(env.Client, tt.ns, tt.name).Load(context.Background()); err == nil {
			t.Errorf("store for namespace %q, sync %q: Load succeeded, want a name error", tt.ns, tt.name)
		}
	}
}
