package cloud

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// DevicesAnnotation on a node class (EC2NodeClass) or a NodePool declares the DRA devices its
// nodes publish, beside or instead of the built-in ones: a YAML list of device templates. An
// annotation, not a field, so that the objects stay valid for Karpenter's CRDs.
//
//	tailor.sh/devices: |
//	  - instanceTypes: ["g6e.*"]      # globs on the type's name; none means every type
//	    driver: fpga.example.com
//	    devices: 2                    # 0 takes the driver's devices away
//	    namePrefix: fpga              # devices fpga-0, fpga-1; "dev" when not set
//	    attributes: {model: VU9P, generation: 3, ecc: true, firmware: {version: 1.2.0}}
//	    capacity: {memory: 64Gi}
//
// A template replaces the driver's devices on each type it selects, whether built in or declared
// by an earlier template; the node class's templates apply before the NodePool's.
const DevicesAnnotation = "tailor.sh/devices"

// maxDevicesPerSlice and maxDeviceFields are the API server's limits on a ResourceSlice: 128
// devices, and 32 attributes and capacities together per device.
const (
	maxDevicesPerSlice = resourcev1.ResourceSliceMaxDevices
	maxDeviceFields    = resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice
)

// DeviceTemplate is one parsed entry of DevicesAnnotation.
type DeviceTemplate struct {
	// InstanceTypes are the globs (path.Match) of the types the template applies to; empty for all.
	InstanceTypes []string
	// Set is what the driver publishes for a node of a selected type; no devices to remove them.
	Set DeviceSet
}

// deviceTemplateSpec is an entry as written.
type deviceTemplateSpec struct {
	InstanceTypes []string                   `json:"instanceTypes,omitempty"`
	Driver        string                     `json:"driver"`
	Devices       *int                       `json:"devices"`
	NamePrefix    string                     `json:"namePrefix,omitempty"`
	Attributes    map[string]json.RawMessage `json:"attributes,omitempty"`
	Capacity      map[string]json.RawMessage `json:"capacity,omitempty"`
}

// ParseDeviceTemplates parses the DevicesAnnotation of the object of the kind named (EC2NodeClass
// "gpu"). The error names the object, the annotation and, for a bad entry, its place and field.
func ParseDeviceTemplates(kind, name, text string) ([]DeviceTemplate, error) {
	where := fmt.Sprintf("%s %q annotation %s", kind, name, DevicesAnnotation)
	var specs []deviceTemplateSpec
	if err := yaml.UnmarshalStrict([]byte(text), &specs); err != nil {
		return nil, fmt.Errorf("%s: not a list of device templates: %w", where, err)
	}
	out := make([]DeviceTemplate, 0, len(specs))
	for i, s := range specs {
		t, err := s.template()
		if err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", where, i+1, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func (s deviceTemplateSpec) template() (DeviceTemplate, error) {
	if s.Driver == "" {
		return DeviceTemplate{}, fmt.Errorf("driver: required")
	}
	if errs := validation.IsDNS1123Subdomain(s.Driver); len(errs) > 0 || len(s.Driver) > resourcev1.DriverNameMaxLength {
		return DeviceTemplate{}, fmt.Errorf("driver %q: must be a DNS subdomain of at most %d characters", s.Driver, resourcev1.DriverNameMaxLength)
	}
	where := fmt.Sprintf("driver %q", s.Driver)
	for _, g := range s.InstanceTypes {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			return DeviceTemplate{}, fmt.Errorf("%s: instanceTypes: %q is not a glob", where, g)
		}
	}
	if s.Devices == nil || *s.Devices < 0 || *s.Devices > maxDevicesPerSlice {
		return DeviceTemplate{}, fmt.Errorf("%s: devices: required, a count from 0 to %d", where, maxDevicesPerSlice)
	}
	prefix := s.NamePrefix
	if prefix == "" {
		prefix = "dev"
	}
	if errs := validation.IsDNS1123Label(fmt.Sprintf("%s-%d", prefix, maxDevicesPerSlice)); len(errs) > 0 {
		return DeviceTemplate{}, fmt.Errorf("%s: namePrefix %q: devices are named %s-0, %s-1...: %s", where, prefix, prefix, prefix, strings.Join(errs, "; "))
	}
	if len(s.Attributes)+len(s.Capacity) > maxDeviceFields-1 {
		return DeviceTemplate{}, fmt.Errorf("%s: %d attributes and capacities; a device has at most %d besides its index", where, len(s.Attributes)+len(s.Capacity), maxDeviceFields-1)
	}
	attrs, err := parseAttributes(s.Attributes)
	if err != nil {
		return DeviceTemplate{}, fmt.Errorf("%s: %w", where, err)
	}
	capacity, err := parseCapacity(s.Capacity)
	if err != nil {
		return DeviceTemplate{}, fmt.Errorf("%s: %w", where, err)
	}
	set := DeviceSet{Driver: s.Driver}
	for i := range *s.Devices {
		d := resourcev1.Device{Name: fmt.Sprintf("%s-%d", prefix, i), Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}}
		d.Attributes["index"] = resourcev1.DeviceAttribute{IntValue: ptr.To(int64(i))}
		for k, v := range attrs {
			d.Attributes[k] = *v.DeepCopy()
		}
		if len(capacity) > 0 {
			d.Capacity = map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{}
			for k, v := range capacity {
				d.Capacity[k] = resourcev1.DeviceCapacity{Value: v.DeepCopy()}
			}
		}
		set.Devices = append(set.Devices, d)
	}
	return DeviceTemplate{InstanceTypes: s.InstanceTypes, Set: set}, nil
}

// identifier is what a DRA attribute or capacity name is without its optional domain.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkName checks an attribute or capacity name as the API server does: a C identifier of at
// most 32 characters, optionally behind a DNS subdomain and a slash.
func checkName(field, name string) error {
	id := name
	if domain, rest, ok := strings.Cut(name, "/"); ok {
		if errs := validation.IsDNS1123Subdomain(domain); len(errs) > 0 {
			return fmt.Errorf("%s %q: the domain before / must be a DNS subdomain", field, name)
		}
		id = rest
	}
	if !identifier.MatchString(id) || len(id) > resourcev1.DeviceMaxIDLength {
		return fmt.Errorf("%s %q: must be a C identifier of at most %d characters, optionally behind a domain and /", field, name, resourcev1.DeviceMaxIDLength)
	}
	return nil
}

// parseAttributes reads each value as a bool, an integer, a string, or {version: semver}.
func parseAttributes(in map[string]json.RawMessage) (map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, error) {
	out := map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{}
	for k, raw := range in {
		if err := checkName("attributes", k); err != nil {
			return nil, err
		}
		if k == "index" {
			return nil, fmt.Errorf("attributes %q: set by Tailor, the device's place in the list", k)
		}
		var a resourcev1.DeviceAttribute
		var b bool
		var n int64
		var s string
		var v struct {
			Version string `json:"version"`
		}
		switch {
		case json.Unmarshal(raw, &b) == nil:
			a.BoolValue = &b
		case json.Unmarshal(raw, &n) == nil:
			a.IntValue = &n
		case json.Unmarshal(raw, &s) == nil && len(s) <= resourcev1.DeviceAttributeMaxValueLength:
			a.StringValue = &s
		case strictUnmarshal(raw, &v) == nil && v.Version != "":
			a.VersionValue = &v.Version
		default:
			return nil, fmt.Errorf("attributes %q: %s is not a bool, an integer, a string of at most %d characters or {version: ...}", k, raw, resourcev1.DeviceAttributeMaxValueLength)
		}
		out[resourcev1.QualifiedName(k)] = a
	}
	return out, nil
}

// parseCapacity reads each value as a quantity (24Gi, 4).
func parseCapacity(in map[string]json.RawMessage) (map[resourcev1.QualifiedName]resource.Quantity, error) {
	out := map[resourcev1.QualifiedName]resource.Quantity{}
	for k, raw := range in {
		if err := checkName("capacity", k); err != nil {
			return nil, err
		}
		text := string(raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			text = s
		}
		q, err := resource.ParseQuantity(text)
		if err != nil {
			return nil, fmt.Errorf("capacity %q: %s is not a quantity: %w", k, raw, err)
		}
		out[resourcev1.QualifiedName(k)] = q
	}
	return out, nil
}

func strictUnmarshal(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// ApplyDeviceTemplates returns the sets of the type named with the templates that select it
// applied in order, and whether any did. sets is not changed.
func ApplyDeviceTemplates(typeName string, sets []DeviceSet, templates []DeviceTemplate) ([]DeviceSet, bool) {
	out, changed := sets, false
	for _, t := range templates {
		if !t.selects(typeName) {
			continue
		}
		if !changed {
			out, changed = append([]DeviceSet(nil), sets...), true
		}
		kept := out[:0:0]
		for _, s := range out {
			if s.Driver != t.Set.Driver {
				kept = append(kept, s)
			}
		}
		if len(t.Set.Devices) > 0 {
			kept = append(kept, t.Set)
		}
		out = kept
	}
	return out, changed
}

func (t DeviceTemplate) selects(typeName string) bool {
	if len(t.InstanceTypes) == 0 {
		return true
	}
	for _, g := range t.InstanceTypes {
		if ok, _ := path.Match(g, typeName); ok {
			return true
		}
	}
	return false
}
