package notify

import (
	"encoding/json"
	"fmt"
	"time"

	"gitsync.dev/gitsync/internal/clip"
)

// maxMessage bounds the message quoted in a chat message; Discord refuses
// content over 2000 characters rather than cut it.
const maxMessage = 1500

// Body returns the JSON body provider expects for e.
func Body(provider string, e Event) ([]byte, error) {
	switch provider {
	case "webhook":
		return json.Marshal(webhookBody(e))
	case "slack":
		return json.Marshal(slackBody(e))
	case "teams":
		return json.Marshal(teamsBody(e))
	case "discord":
		return json.Marshal(discordBody(e))
	}
	return nil, fmt.Errorf("provider %q unknown", provider)
}

// WebhookPayload is the generic webhook's body.
type WebhookPayload struct {
	GitSync  ObjectRef `json:"gitsync"`
	Revision string    `json:"revision,omitempty"`
	State    State     `json:"state"`
	Reason   string    `json:"reason,omitempty"`
	Message  string    `json:"message,omitempty"`
	Time     string    `json:"time"`
}

// ObjectRef names the GitSync.
type ObjectRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func webhookBody(e Event) WebhookPayload {
	return WebhookPayload{GitSync: ObjectRef{e.Namespace, e.Name}, Revision: e.Revision, State: e.State,
		Reason: e.Reason, Message: e.Message, Time: e.Time.UTC().Format(time.RFC3339)}
}

// Title is the one-line summary chat messages start with, e.g.
// "GitSync prod/app failed: ApplyFailed".
func Title(e Event) string {
	name := e.Namespace + "/" + e.Name
	switch e.State {
	case Ready:
		return "GitSync " + name + " is Ready"
	case Recovered:
		return "GitSync " + name + " recovered"
	}
	if e.Reason != "" {
		return "GitSync " + name + " failed: " + e.Reason
	}
	return "GitSync " + name + " failed"
}

// colour is green for Ready and Recovered, red for Failed.
func colour(s State) int {
	if s == Failed {
		return 0xD73A49
	}
	return 0x2DA44E
}

type fact struct{ name, value string }

// facts are the fields every chat message lists.
func facts(e Event) []fact {
	out := []fact{{"Revision", e.Revision}, {"Reason", e.Reason}}
	kept := out[:0]
	for _, f := range out {
		if f.value != "" {
			kept = append(kept, f)
		}
	}
	return kept
}

func slackBody(e Event) map[string]any {
	var fields []map[string]any
	for _, f := range facts(e) {
		fields = append(fields, map[string]any{"title": f.name, "value": f.value, "short": false})
	}
	return map[string]any{
		"text": Title(e),
		"attachments": []map[string]any{{
			"color": fmt.Sprintf("#%06X", colour(e.State)), "text": clip.To(e.Message, maxMessage),
			"fields": fields, "ts": e.Time.Unix(), "fallback": Title(e),
		}},
	}
}

// teamsBody is a message carrying one Adaptive Card: what a Teams
// Workflows webhook ("send webhook alerts to a channel") posts, and what
// the retired Office 365 connectors accepted too.
func teamsBody(e Event) map[string]any {
	var fs []map[string]string
	for _, f := range facts(e) {
		fs = append(fs, map[string]string{"title": f.name, "value": f.value})
	}
	fs = append(fs, map[string]string{"title": "Time", "value": e.Time.UTC().Format(time.RFC3339)})
	titleColour := "Good"
	if e.State == Failed {
		titleColour = "Attention"
	}
	card := map[string]any{
		"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
		"body": []map[string]any{
			{"type": "TextBlock", "text": Title(e), "weight": "Bolder", "size": "Medium", "wrap": true, "color": titleColour},
			{"type": "TextBlock", "text": clip.To(e.Message, maxMessage), "wrap": true},
			{"type": "FactSet", "facts": fs},
		},
	}
	return map[string]any{
		"type":        "message",
		"attachments": []map[string]any{{"contentType": "application/vnd.microsoft.card.adaptive", "content": card}},
	}
}

func discordBody(e Event) map[string]any {
	var fields []map[string]any
	for _, f := range facts(e) {
		fields = append(fields, map[string]any{"name": f.name, "value": clip.To(f.value, 1000)})
	}
	return map[string]any{
		"content": Title(e),
		"embeds": []map[string]any{{
			"title": Title(e), "description": clip.To(e.Message, maxMessage), "color": colour(e.State),
			"fields": fields, "timestamp": e.Time.UTC().Format(time.RFC3339),
		}},
		// A message quoting a manifest must not ping anyone.
		"allowed_mentions": map[string]any{"parse": []string{}},
	}
}
