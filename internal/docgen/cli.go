package docgen

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CLIReference renders every available command of root's tree (hidden,
// deprecated and help commands left out), depth first in cobra's order:
// usage line, short and long text, aliases, examples, and the command's own
// flags with their defaults. The root's persistent flags are listed once, as
// global flags. source is the package the page says it was generated from.
//
// Defaults are rendered as the flags declare them; a default computed from
// the machine (a home or cache directory) would make the page differ from
// machine to machine, so commands must declare such defaults as "" and say
// what the empty value means in the usage text.
func CLIReference(root *cobra.Command, source string) []byte {
	var cmds []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		cmds = append(cmds, c)
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && !sub.IsAdditionalHelpTopicCommand() {
				walk(sub)
			}
		}
	}
	walk(root)

	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s command reference\n\n", root.Name())
	fmt.Fprintf(&b, "<!-- Generated from %s by `make docs`; do not edit. -->\n\n", source)
	fmt.Fprintf(&b, "Every command also takes the [global flags](#global-flags), and `-h, --help`.\n\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "%s- [%s](#%s) — %s\n", strings.Repeat("  ", depth(c)), c.CommandPath(), Slug(c.CommandPath()), c.Short)
	}
	b.WriteString("\n")
	for _, c := range cmds {
		renderCommand(&b, c)
	}
	fmt.Fprintf(&b, "## Global flags\n\n")
	fmt.Fprintf(&b, "Taken by every command.\n\n")
	renderFlags(&b, root.PersistentFlags())
	return append(bytes.TrimRight(b.Bytes(), "\n"), '\n')
}

func depth(c *cobra.Command) int {
	n := 0
	for p := c.Parent(); p != nil; p = p.Parent() {
		n++
	}
	return n
}

func renderCommand(b *bytes.Buffer, c *cobra.Command) {
	fmt.Fprintf(b, "## %s\n\n", c.CommandPath())
	if c.Short != "" {
		b.WriteString(sentence(c.Short) + "\n\n")
	}
	fmt.Fprintf(b, "```\n%s\n```\n\n", c.UseLine())
	if long := strings.TrimSpace(c.Long); long != "" && long != strings.TrimSpace(c.Short) {
		b.WriteString(longText(long))
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(b, "Aliases: `%s`.\n\n", strings.Join(c.Aliases, "`, `"))
	}
	if c.Example != "" {
		fmt.Fprintf(b, "Examples:\n\n```sh\n%s\n```\n\n", dedent(c.Example))
	}
	local := pflag.NewFlagSet(c.Name(), pflag.ContinueOnError)
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && !f.Hidden && f.Deprecated == "" {
			local.AddFlag(f)
		}
	})
	if c.HasParent() && local.HasFlags() {
		b.WriteString("Flags:\n\n")
		renderFlags(b, local)
	}
}

func renderFlags(b *bytes.Buffer, fs *pflag.FlagSet) {
	b.WriteString("| Flag | Default | Description |\n|---|---|---|\n")
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "help" || f.Hidden || f.Deprecated != "" {
			return
		}
		varname, usage := pflag.UnquoteUsage(f)
		name := "--" + f.Name
		if f.Shorthand != "" && f.ShorthandDeprecated == "" {
			name = "-" + f.Shorthand + ", " + name
		}
		if varname != "" {
			name += " " + varname
		}
		def := ""
		if !zeroDefault(f) {
			def = "`" + f.DefValue + "`"
			if f.DefValue == "" {
				def = `""`
			}
		}
		fmt.Fprintf(b, "| `%s` | %s | %s |\n", name, def, cell(markup(usage)))
	})
	b.WriteString("\n")
}

// zeroDefault reports whether a flag's default is its type's zero value,
// which the reference leaves blank (as cobra's help does).
func zeroDefault(f *pflag.Flag) bool {
	switch f.Value.Type() {
	case "bool":
		return f.DefValue == "false"
	case "duration":
		return f.DefValue == "0" || f.DefValue == "0s"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "count":
		return f.DefValue == "0"
	case "string":
		return f.DefValue == ""
	case "stringSlice", "stringArray", "intSlice", "uintSlice":
		return f.DefValue == "[]" || f.DefValue == ""
	}
	return f.DefValue == "" || f.DefValue == "[]" || f.DefValue == "<nil>"
}

// longText renders a command's long help: prose paragraphs as Markdown,
// indented lines (a list of outputs, a shell line) as preformatted text.
func longText(long string) string {
	var b strings.Builder
	var prose, pre []string
	flushProse := func() {
		if len(prose) > 0 {
			b.WriteString(markup(strings.Join(prose, " ")) + "\n\n")
			prose = nil
		}
	}
	flushPre := func() {
		if len(pre) > 0 {
			b.WriteString("```\n" + dedent(strings.Join(pre, "\n")) + "\n```\n\n")
			pre = nil
		}
	}
	for _, line := range strings.Split(long, "\n") {
		switch {
		case strings.TrimSpace(line) == "":
			flushProse()
			flushPre()
		case line[0] == ' ' || line[0] == '\t':
			flushProse()
			pre = append(pre, line)
		default:
			flushPre()
			prose = append(prose, strings.TrimSpace(line))
		}
	}
	flushProse()
	flushPre()
	return b.String()
}

// dedent removes the indentation all non-empty lines share.
func dedent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	for i, l := range lines {
		if len(l) >= common && common > 0 {
			lines[i] = l[common:]
		}
	}
	return strings.Join(lines, "\n")
}

// sentence ends s with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return markup(s)
	}
	return markup(s) + "."
}
