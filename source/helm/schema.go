package helm

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
)

// schemaURL is the name the schema is compiled under; nothing is read from it.
const schemaURL = "file:///values.schema.json"

// validateValues checks vals against the chart's values.schema.json and each
// subchart's against its own, as Helm does, except that a $ref to anything
// but the schema itself is refused instead of loaded: Helm would read it
// from the agent's disk (file://) or the network (http, https).
func validateValues(c *chart.Chart, vals map[string]any) error {
	var problems []string
	if c.Schema != nil {
		if err := validateOne(c.Schema, vals); err != nil {
			problems = append(problems, c.Name()+": "+err.Error())
		}
	}
	for _, sub := range c.Dependencies() {
		raw, ok := vals[sub.Name()]
		if !ok || raw == nil {
			continue
		}
		subVals, ok := asMap(raw)
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: values are a %T, not a map", sub.Name(), raw))
			continue
		}
		if err := validateValues(sub, subVals); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// validateOne compiles one schema with no loader and validates vals.
func validateOne(schemaJSON []byte, vals map[string]any) error {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return fmt.Errorf("values.schema.json is not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	if err := s.Validate(map[string]any(vals)); err != nil {
		return fmt.Errorf("values do not match values.schema.json: %s",
			strings.TrimSpace(strings.TrimPrefix(err.Error(), "jsonschema validation failed with '"+schemaURL+"#'")))
	}
	return nil
}

// refusingLoader loads nothing: a schema may only refer to itself.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("$ref %s not loaded: a chart's schema may only refer to itself", url)
}
