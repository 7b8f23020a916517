package inventory

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "gitsync.dev/gitsync/api/v1alpha1"
)

const (
	// ConfigMapPrefix starts the name of every inventory ConfigMap; the sync
	// name follows.
	ConfigMapPrefix = "gitsync-inventory-"
	// ConfigMapKey holds the gzip-compressed JSON Inventory in binaryData.
	ConfigMapKey = "inventory.json.gz"
	// MaxConfigMapBytes is the largest compressed inventory stored: a
	// ConfigMap is capped at 1 MiB, and metadata needs some of it. Some
	// 30,000 entries fit: each costs 25-40 bytes compressed, mostly its
	// incompressible UID (8,000 entries measured 200 KB).
	MaxConfigMapBytes = 900 << 10
	// maxDecodedBytes caps decompression of a stored inventory.
	maxDecodedBytes = 64 << 20
)

// TooLargeError reports an inventory that does not fit its store.
type TooLargeError struct {
	Entries, Bytes, Limit int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("inventory of %d entries is %d bytes compressed, more than the %d a ConfigMap holds", e.Entries, e.Bytes, e.Limit)
}

// configMapStore keeps one sync's inventory in one ConfigMap, compressed.
type configMapStore struct {
	c         client.Client
	key       client.ObjectKey
	syncName  string
	limit     int
	invalidBy error
}

var _ Store = (*configMapStore)(nil)

// NewConfigMapStore returns the Store of the CLI sync syncName: the
// ConfigMap "gitsync-inventory-<syncName>" in namespace, labelled
// gitsync.dev/inventory: <syncName>. The entries are the JSON form of
// Inventory, gzip-compressed in binaryData, so several thousand fit. An
// invalid name is reported by Load and Save. It never touches a ConfigMap of
// that name without the label.
func NewConfigMapStore(c client.Client, namespace, syncName string) Store {
	s := &configMapStore{
		c:        c,
		key:      client.ObjectKey{Namespace: namespace, Name: ConfigMapPrefix + syncName},
		syncName: syncName,
		limit:    MaxConfigMapBytes,
	}
	var problems []string
	if namespace == "" {
		problems = append(problems, "a namespace is required")
	}
	if syncName == "" {
		problems = append(problems, "a sync name is required")
	}
	problems = append(problems, validation.IsDNS1123Subdomain(s.key.Name)...)
	problems = append(problems, validation.IsValidLabelValue(syncName)...)
	if len(problems) > 0 {
		s.invalidBy = fmt.Errorf("inventory store for sync %q: %s", syncName, strings.Join(problems, "; "))
	}
	return s
}

func (s *configMapStore) Load(ctx context.Context) (*Inventory, error) {
	cm, err := s.get(ctx)
	if err != nil || cm == nil {
		return New(), err
	}
	return decodeInventory(cm.BinaryData[ConfigMapKey])
}

func (s *configMapStore) Save(ctx context.Context, inv *Inventory) error {
	inv = New(inv.entries()...)
	cm, err := s.get(ctx)
	if err != nil {
		return err
	}
	if cm != nil {
		if stored, err := decodeInventory(cm.BinaryData[ConfigMapKey]); err == nil && slices.Equal(stored.Entries, inv.Entries) {
			return nil
		}
	}
	data, err := encodeInventory(inv, s.limit)
	if err != nil {
		return fmt.Errorf("ConfigMap/%s/%s save failed: %w", s.key.Namespace, s.key.Name, err)
	}
	if cm == nil {
		cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: s.key.Namespace, Name: s.key.Name, Labels: map[string]string{v1.LabelInventory: s.syncName},
		}}
	}
	metav1.SetMetaDataAnnotation(&cm.ObjectMeta, v1.AnnotationInventoryEntries, strconv.Itoa(inv.Len()))
	cm.BinaryData = map[string][]byte{ConfigMapKey: data}
	if cm.ResourceVersion == "" {
		err = s.c.Create(ctx, cm, client.FieldOwner(v1.FieldManager))
	} else {
		err = s.c.Update(ctx, cm, client.FieldOwner(v1.FieldManager)) // resourceVersion guards concurrent CLIs
	}
	if err != nil {
		return fmt.Errorf("ConfigMap/%s/%s save failed: %w", s.key.Namespace, s.key.Name, err)
	}
	return nil
}

// get returns the inventory ConfigMap, nil when there is none, and an
// error when the name is taken by a ConfigMap that is not this inventory.
func (s *configMapStore) get(ctx context.Context) (*corev1.ConfigMap, error) {
	if s.invalidBy != nil {
		return nil, s.invalidBy
	}
	cm := &corev1.ConfigMap{}
	if err := s.c.Get(ctx, s.key, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("ConfigMap/%s/%s load failed: %w", s.key.Namespace, s.key.Name, err)
	}
	if got := cm.Labels[v1.LabelInventory]; got != s.syncName {
		return nil, fmt.Errorf("ConfigMap/%s/%s is not the inventory of sync %q (label %s=%q)", s.key.Namespace, s.key.Name, s.syncName, v1.LabelInventory, got)
	}
	return cm, nil
}

// encodeInventory returns inv as gzip-compressed JSON, at most limit bytes.
func encodeInventory(inv *Inventory, limit int) ([]byte, error) {
	raw, err := json.Marshal(inv)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	if buf.Len() > limit {
		return nil, &TooLargeError{Entries: inv.Len(), Bytes: buf.Len(), Limit: limit}
	}
	return buf.Bytes(), nil
}

// decodeInventory reverses encodeInventory; no data is an empty inventory.
func decodeInventory(data []byte) (*Inventory, error) {
	if len(data) == 0 {
		return New(), nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxDecodedBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	if len(raw) > maxDecodedBytes {
		return nil, errors.New("decode inventory: more than 64 MiB uncompressed")
	}
	var inv Inventory
	if err := json.Unmarshal(raw, &inv); err != nil {
		return nil, fmt.Errorf("decode inventory: %w", err)
	}
	return New(inv.Entries...), nil
}
