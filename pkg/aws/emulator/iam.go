package emulator

import (
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"time"
)

// IAM speaks the Query protocol like EC2, but its XML differs: PascalCase elements, lists of
// <member>, the result wrapped in <ActionResult>, the request ID in <ResponseMetadata>, and errors
// in <ErrorResponse>. The SDK's awsquery deserializers insist on exactly that.
const (
	iamVersion   = "2010-05-08"
	iamNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// NodeRoleName is the node role the emulated account has for a cluster, named as in Karpenter's
// getting-started guide, so EC2NodeClasses copied from it (spec.role) resolve.
func NodeRoleName(cluster string) string { return "KarpenterNodeRole-" + cluster }

// Role is an IAM role.
type Role struct {
	Name, ID string
	Created  time.Time
	// policies are its inline policies, JSON documents by name.
	policies map[string]string
}

// InstanceProfile is an IAM instance profile; IAM lets it hold at most one role.
type InstanceProfile struct {
	Name, ID, Path string
	Roles          []string
	Tags           map[string]string
	Created        time.Time
}

// AddRole creates an IAM role, e.g. the node role of another cluster.
func (e *Emulator) AddRole(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addRoleLocked(name)
}

func (e *Emulator) addRoleLocked(name string) {
	if _, ok := e.world.roles[name]; !ok {
		e.world.roles[name] = &Role{Name: name, ID: e.newID("AROA"), Created: e.clock.Now()}
	}
}

// InstanceProfiles returns copies of the instance profiles, sorted by name.
func (e *Emulator) InstanceProfiles() []InstanceProfile {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]InstanceProfile, 0, len(e.world.profiles))
	for _, name := range sortedKeys(e.world.profiles) {
		p := *e.world.profiles[name]
		p.Roles, p.Tags = append([]string(nil), p.Roles...), copyTags(p.Tags)
		out = append(out, p)
	}
	return out
}

type iamTagXML struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type iamRoleXML struct {
	Path                     string `xml:"Path"`
	RoleName                 string `xml:"RoleName"`
	RoleID                   string `xml:"RoleId"`
	Arn                      string `xml:"Arn"`
	CreateDate               string `xml:"CreateDate"`
	AssumeRolePolicyDocument string `xml:"AssumeRolePolicyDocument"`
}

type iamProfileXML struct {
	Path                string       `xml:"Path"`
	InstanceProfileName string       `xml:"InstanceProfileName"`
	InstanceProfileID   string       `xml:"InstanceProfileId"`
	Arn                 string       `xml:"Arn"`
	CreateDate          string       `xml:"CreateDate"`
	Roles               []iamRoleXML `xml:"Roles>member"`
	Tags                []iamTagXML  `xml:"Tags>member"`
}

// trustPolicy is the URL-encoded document IAM returns: EC2 may assume the role.
const trustPolicy = "%7B%22Version%22%3A%222012-10-17%22%2C%22Statement%22%3A%5B%7B%22Effect%22%3A%22Allow%22%2C%22Principal%22%3A%7B%22Service%22%3A%22ec2.amazonaws.com%22%7D%2C%22Action%22%3A%22sts%3AAssumeRole%22%7D%5D%7D"

func (r *Role) xml() iamRoleXML {
	return iamRoleXML{Path: "/", RoleName: r.Name, RoleID: r.ID, Arn: "arn:aws:iam::" + AccountID + ":role/" + r.Name,
		CreateDate: ec2Time(r.Created), AssumeRolePolicyDocument: trustPolicy}
}

// profileXMLLocked renders a profile with its roles in full, as IAM does. Callers hold e.mu.
func (e *Emulator) profileXMLLocked(p *InstanceProfile) iamProfileXML {
	out := iamProfileXML{Path: p.Path, InstanceProfileName: p.Name, InstanceProfileID: p.ID, CreateDate: ec2Time(p.Created),
		Arn: "arn:aws:iam::" + AccountID + ":instance-profile" + p.Path + p.Name}
	for _, name := range p.Roles {
		if r, ok := e.world.roles[name]; ok {
			out.Roles = append(out.Roles, r.xml())
		}
	}
	for _, k := range sortedKeys(p.Tags) {
		out.Tags = append(out.Tags, iamTagXML{Key: k, Value: p.Tags[k]})
	}
	return out
}

func noSuchEntity(format string, args ...any) *apiError {
	return &apiError{Code: "NoSuchEntity", Message: fmt.Sprintf(format, args...), Status: http.StatusNotFound}
}

// serveIAM handles the instance-profile actions Karpenter's (and Tailor's) node class controller
// uses. An output of nil means the action returns only response metadata.
func (e *Emulator) serveIAM(w http.ResponseWriter, reqID, action string, q query) {
	e.mu.Lock()
	out, err := e.iamLocked(action, q)
	e.mu.Unlock()
	if err != nil {
		writeIAMError(w, reqID, asAPIError(err))
		return
	}
	writeIAM(w, reqID, action, out)
}

func (e *Emulator) iamLocked(action string, q query) (any, error) {
	if serve, ok := iamActions[action]; ok {
		return serve(e, q)
	}
	return nil, &apiError{Code: "InvalidAction", Message: "the AWS emulator does not serve IAM " + action}
}

// iamActions are the IAM actions the emulator serves; each runs with e.mu held.
var iamActions = map[string]func(e *Emulator, q query) (any, error){
	"GetRole":                       (*Emulator).iamGetRole,
	"GetInstanceProfile":            (*Emulator).iamGetInstanceProfile,
	"CreateInstanceProfile":         (*Emulator).iamCreateInstanceProfile,
	"AddRoleToInstanceProfile":      (*Emulator).iamAddRoleToInstanceProfile,
	"RemoveRoleFromInstanceProfile": (*Emulator).iamRemoveRoleFromInstanceProfile,
	"TagInstanceProfile":            (*Emulator).iamTagInstanceProfile,
	"ListRolePolicies":              func(e *Emulator, q query) (any, error) { return e.iamPoliciesLocked("ListRolePolicies", q) },
	"GetRolePolicy":                 func(e *Emulator, q query) (any, error) { return e.iamPoliciesLocked("GetRolePolicy", q) },
	"ListAttachedRolePolicies":      func(e *Emulator, q query) (any, error) { return e.iamPoliciesLocked("ListAttachedRolePolicies", q) },
}

// profileNamed is the instance profile the request's InstanceProfileName names.
func (e *Emulator) profileNamed(q query) (*InstanceProfile, error) {
	name := q.get("InstanceProfileName")
	if p, ok := e.world.profiles[name]; ok {
		return p, nil
	}
	return nil, noSuchEntity("Instance Profile %s cannot be found.", name)
}

// roleNamed is the role the request's RoleName names.
func (e *Emulator) roleNamed(q query) (*Role, error) {
	name := q.get("RoleName")
	if r, ok := e.world.roles[name]; ok {
		return r, nil
	}
	return nil, noSuchEntity("The role with name %s cannot be found.", name)
}

func (e *Emulator) iamGetRole(q query) (any, error) {
	r, err := e.roleNamed(q)
	if err != nil {
		return nil, err
	}
	return struct {
		Role iamRoleXML `xml:"Role"`
	}{r.xml()}, nil
}

func (e *Emulator) iamGetInstanceProfile(q query) (any, error) {
	p, err := e.profileNamed(q)
	if err != nil {
		return nil, err
	}
	return struct {
		InstanceProfile iamProfileXML `xml:"InstanceProfile"`
	}{e.profileXMLLocked(p)}, nil
}

func (e *Emulator) iamCreateInstanceProfile(q query) (any, error) {
	name := q.get("InstanceProfileName")
	if name == "" || len(name) > 128 {
		return nil, &apiError{Code: "ValidationError", Message: "1 validation error detected: Value at 'instanceProfileName' failed to satisfy constraint: Member must have length between 1 and 128"}
	}
	if _, ok := e.world.profiles[name]; ok {
		return nil, &apiError{Code: "EntityAlreadyExists", Message: "Instance Profile " + name + " already exists.", Status: http.StatusConflict}
	}
	path := q.get("Path")
	if path == "" {
		path = "/"
	}
	p := &InstanceProfile{Name: name, ID: e.newID("AIPA"), Path: path, Tags: iamTags(q), Created: e.clock.Now()}
	e.world.profiles[name] = p
	return struct {
		InstanceProfile iamProfileXML `xml:"InstanceProfile"`
	}{e.profileXMLLocked(p)}, nil
}

func (e *Emulator) iamAddRoleToInstanceProfile(q query) (any, error) {
	p, err := e.profileNamed(q)
	if err != nil {
		return nil, err
	}
	r, err := e.roleNamed(q)
	if err != nil {
		return nil, err
	}
	if len(p.Roles) > 0 {
		return nil, &apiError{Code: "LimitExceeded", Message: "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1", Status: http.StatusConflict}
	}
	p.Roles = []string{r.Name}
	return nil, nil
}

func (e *Emulator) iamRemoveRoleFromInstanceProfile(q query) (any, error) {
	p, err := e.profileNamed(q)
	if err != nil {
		return nil, err
	}
	if len(p.Roles) == 0 || p.Roles[0] != q.get("RoleName") {
		return nil, noSuchEntity("The role with name %s cannot be found in instance profile %s.", q.get("RoleName"), p.Name)
	}
	p.Roles = nil
	return nil, nil
}

func (e *Emulator) iamTagInstanceProfile(q query) (any, error) {
	p, err := e.profileNamed(q)
	if err != nil {
		return nil, err
	}
	for k, v := range iamTags(q) {
		p.Tags[k] = v
	}
	return nil, nil
}

// iamTags reads Tags.member.N.{Key,Value}.
func iamTags(q query) map[string]string {
	out := map[string]string{}
	for _, t := range q.items("Tags.member") {
		out[t.get("Key")] = t.get("Value")
	}
	return out
}

func writeIAM(w http.ResponseWriter, reqID, action string, result any) {
	w.Header().Set("Content-Type", "text/xml")
	_, _ = io.WriteString(w, xml.Header+`<`+action+`Response xmlns="`+iamNamespace+`">`)
	enc := xml.NewEncoder(w)
	if result != nil {
		if err := enc.EncodeElement(result, xml.StartElement{Name: xml.Name{Local: action + "Result"}}); err != nil {
			_, _ = io.WriteString(w, "<!-- "+err.Error()+" -->")
		}
	}
	_ = enc.Encode(struct {
		XMLName   xml.Name `xml:"ResponseMetadata"`
		RequestID string   `xml:"RequestId"`
	}{RequestID: reqID})
	_, _ = io.WriteString(w, `</`+action+`Response>`)
}

type iamErrorBody struct {
	XMLName   xml.Name `xml:"ErrorResponse"`
	Xmlns     string   `xml:"xmlns,attr"`
	Type      string   `xml:"Error>Type"`
	Code      string   `xml:"Error>Code"`
	Message   string   `xml:"Error>Message"`
	RequestID string   `xml:"RequestId"`
}

func writeIAMError(w http.ResponseWriter, reqID string, err *apiError) {
	status := err.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	kind := "Sender"
	if status >= 500 {
		kind = "Receiver"
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(iamErrorBody{Xmlns: iamNamespace, Type: kind, Code: err.Code, Message: err.Message, RequestID: reqID})
}

// Roles returns the names of the IAM roles, sorted.
func (e *Emulator) Roles() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return sortedKeys(e.world.roles)
}
