package diff_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"gitsync.dev/gitsync/diff"
)

func ExampleUnified() {
	live := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "db", "namespace": "prod", "resourceVersion": "7"},
		"data":     map[string]any{"user": "YWRtaW4=", "password": "aHVudGVyMg=="},
	}}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": "db", "namespace": "prod"},
		"stringData": map[string]any{"user": "admin", "password": "correct-horse"},
	}}
	fmt.Print(diff.Unified("Secret/prod/db", live, desired))
	// Output:
	// --- Secret/prod/db (live)
	// +++ Secret/prod/db (desired)
	// @@ -1,8 +1,8 @@
	//  apiVersion: v1
	// -data:
	// -  password: '*** (before)'
	// -  user: '***'
	//  kind: Secret
	//  metadata:
	//    name: db
	//    namespace: prod
	// +stringData:
	// +  password: '*** (after)'
	// +  user: '***'
}

func ExampleDiffer_Diff() {
	// A Differ without a client still decides what it can locally; here the
	// object does not exist yet.
	d, err := diff.New(nil, diff.DefaultOptions())
	if err != nil {
		panic(err)
	}
	desired := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "app", "namespace": "prod"},
		"data":     map[string]any{"mode": "fast"},
	}}
	res, err := d.Diff(context.Background(), desired, nil)
	fmt.Println(res.Verdict, res.DryRun, err)
	// Output: missing false <nil>
}
