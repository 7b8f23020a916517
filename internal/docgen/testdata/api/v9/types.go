package v9

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Widget is a resource of the fixture.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=wd
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec WidgetSpec `json:"spec"`
}

// WidgetList is not rendered: it has no Spec.
//
// +kubebuilder:object:root=true
type WidgetList struct {
	Items []Widget `json:"items"`
}

// WidgetSpec is what a Widget wants.
type WidgetSpec struct {
	// Size of the widget.
	Size int32 `json:"size"`

	// Every says how often.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s')",message="every must be at least 1s"
	// +optional
	Every metav1.Duration `json:"every,omitzero"`

	// Colour is one of a few | piped.
	// +kubebuilder:validation:Enum=red;blue
	// +optional
	Colour Colour `json:"colour,omitempty"`

	// Parts lists the parts; ${NAME} stays literal.
	// +kubebuilder:validation:MaxItems=3
	Parts []Part `json:"parts,omitempty"`

	internal string
	Ignored  string `json:"-"`
}

// Part is one part.
type Part struct {
	// Name of the part.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=10
	Name string `json:"name"`
}

// Colour is a colour.
type Colour string

const (
	// ColourRed is red.
	ColourRed  Colour = "red"
	ColourBlue Colour = "blue" // ColourBlue: blue.
)

// Labels the fixture knows, in one block.
const (
	// LabelOwner: who owns a widget.
	LabelOwner  = "example.dev/owner"
	notExported = "x"
)

// Unused is reached from no resource and is left out.
type Unused struct{}

// Domain is the fixture's domain, alone.
const Domain = "example.dev"
