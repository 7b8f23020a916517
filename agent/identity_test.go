package agent

import "testing"

func TestParseServiceAccount(t *testing.T) {
	for _, tc := range []struct{ user, ns, name string }{
		{"system:serviceaccount:gitsync-system:gitsync", "gitsync-system", "gitsync"},
		{"system:serviceaccount:gitsync-system", "", ""},
		{"system:serviceaccount::gitsync", "", ""},
		{"kubernetes-admin", "", ""},
		{"", "", ""},
	} {
		ns, name := parseServiceAccount(tc.user)
		if ns != tc.ns || name != tc.name {
			t.Errorf("parseServiceAccount(%q) = %q, %q; want %q, %q", tc.user, ns, name, tc.ns, tc.name)
		}
	}
}
