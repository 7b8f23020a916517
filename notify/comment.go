package notify

import (
	"fmt"
	"strings"

	"gitsync.dev/gitsync/internal/clip"
)

// commentMessageMax bounds the condition message quoted in a comment.
const commentMessageMax = 4000

// changeMarks are the diff-block line marks of each action.
var changeMarks = map[string]string{"created": "+", "configured": "~", "pruned": "-", "orphaned": "-"}

// CommentBody is the Markdown a pull or merge request comment says about
// e: the title, revision, reason and message, and e's changes as a diff
// block ("+ created", "~ configured", "- pruned" lines). Free text sits in
// code blocks, so a message or object name can mention no one and break
// no formatting.
func CommentBody(e Event) string {
	var b strings.Builder
	mark := "✅"
	if e.State == Failed {
		mark = "❌"
	}
	fmt.Fprintf(&b, "### %s %s\n\n", mark, Title(e))
	if e.Revision != "" {
		fmt.Fprintf(&b, "**Revision:** %s\n", inlineCode(e.Revision))
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, "**Reason:** %s\n", inlineCode(e.Reason))
	}
	if e.Message != "" {
		b.WriteString("\n" + fenced("text", clip.To(e.Message, commentMessageMax)))
	}
	b.WriteString("\n")
	if len(e.Changes) == 0 {
		b.WriteString("No object in the cluster changed.\n")
		return b.String()
	}
	b.WriteString("**Changes to the cluster:**\n\n")
	var lines strings.Builder
	for _, c := range e.Changes {
		m := changeMarks[c.Action]
		if m == "" {
			m = " "
		}
		fmt.Fprintf(&lines, "%s %s %s\n", m, c.Action, c.Subject)
	}
	b.WriteString(fenced("diff", lines.String()))
	if e.MoreChanges > 0 {
		fmt.Fprintf(&b, "\nand %d more\n", e.MoreChanges)
	}
	return b.String()
}

// fenced puts text in a code block whose fence is longer than any run of
// backticks in it.
func fenced(lang, text string) string {
	fence := "```"
	for strings.Contains(text, fence) {
		fence += "`"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return fence + lang + "\n" + text + fence + "\n"
}

// inlineCode is s as inline code, whatever backticks it holds.
func inlineCode(s string) string {
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	return fence + " " + s + " " + fence
}
