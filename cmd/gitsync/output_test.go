package main

import "testing"

func TestProgressBar(t *testing.T) {
	tests := []struct {
		name               string
		done, total, width int
		want               string
	}{
		{"nothing known", 0, 0, 10, ""},
		{"start", 0, 1000, 10, "[          ] 0/1000"},
		{"a third", 340, 1000, 10, "[===       ] 340/1000"},
		{"done", 1000, 1000, 10, "[==========] 1000/1000"},
		{"overshoot is clamped", 12, 10, 10, "[==========] 10/10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := progressBar(tt.done, tt.total, tt.width); got != tt.want {
				t.Errorf("progressBar(%d, %d, %d) = %q, want %q", tt.done, tt.total, tt.width, got, tt.want)
			}
		})
	}
}
