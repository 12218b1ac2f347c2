package emulator

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// What `tailor doctor` reads of the account beyond EC2: EventBridge rules and their targets, an SQS
// queue's attributes (its ARN and access policy), and the IAM policies of a role. Each can be set
// up correctly in one call (SetUpInterruptionQueue) and then broken one piece at a time.

// Rule is an EventBridge rule on the default event bus.
type Rule struct {
	Name         string
	EventPattern string
	// State is ENABLED or DISABLED; empty means ENABLED.
	State string
	// Targets are the ARNs the rule sends matching events to.
	Targets []string
}

// InterruptionRules are the four rules Karpenter's getting-started CloudFormation template creates
// for its interruption queue, by the detail-type each matches.
var InterruptionRules = []struct{ Name, Source, DetailType string }{
	{"ScheduledChangeRule", "aws.health", "AWS Health Event"},
	{"SpotInterruptionRule", "aws.ec2", "EC2 Spot Instance Interruption Warning"},
	{"RebalanceRule", "aws.ec2", "EC2 Instance Rebalance Recommendation"},
	{"InstanceStateChangeRule", "aws.ec2", "EC2 Instance State-change Notification"},
}

// QueueARN is the ARN of the emulated queue of that name.
func (e *Emulator) QueueARN(name string) string {
	return "arn:aws:sqs:" + e.region + ":" + AccountID + ":" + name
}

// QueuePolicy is the access policy Karpenter's template gives the interruption queue: EventBridge
// (events.amazonaws.com) and SQS itself may send to it.
func (e *Emulator) QueuePolicy(name string) string {
	doc := map[string]any{
		"Version": "2012-10-17",
		"Id":      "EC2InterruptionPolicy",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": []string{"events.amazonaws.com", "sqs.amazonaws.com"}},
			"Action":    "sqs:SendMessage",
			"Resource":  e.QueueARN(name),
		}},
	}
	raw, _ := json.Marshal(doc)
	return string(raw)
}

// SetUpInterruptionQueue creates the queue with its access policy and the four EventBridge rules
// that feed it, each named with the queue's name as a prefix, as a correctly set up account has.
func (e *Emulator) SetUpInterruptionQueue(name string) string {
	url := e.CreateQueue(name)
	e.SetQueuePolicy(name, e.QueuePolicy(name))
	for _, r := range InterruptionRules {
		pattern, _ := json.Marshal(map[string]any{"source": []string{r.Source}, "detail-type": []string{r.DetailType}})
		e.PutRule(Rule{Name: name + "-" + r.Name, EventPattern: string(pattern), Targets: []string{e.QueueARN(name)}})
	}
	return url
}

// SetQueuePolicy sets (or, with "", removes) a queue's access policy.
func (e *Emulator) SetQueuePolicy(name, policy string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if q, ok := e.queues[name]; ok {
		q.policy = policy
	}
}

// PutRule creates or replaces an EventBridge rule.
func (e *Emulator) PutRule(r Rule) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.rules == nil {
		e.rules = map[string]*Rule{}
	}
	r.Targets = append([]string(nil), r.Targets...)
	e.rules[r.Name] = &r
}

// DeleteRule removes an EventBridge rule.
func (e *Emulator) DeleteRule(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.rules, name)
}

// Rules returns copies of the EventBridge rules, sorted by name.
func (e *Emulator) Rules() []Rule {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]Rule, 0, len(e.rules))
	for _, name := range sortedKeys(e.rules) {
		r := *e.rules[name]
		r.Targets = append([]string(nil), r.Targets...)
		out = append(out, r)
	}
	return out
}

type eventsInput struct {
	NamePrefix   string `json:"NamePrefix"`
	EventBusName string `json:"EventBusName"`
	Rule         string `json:"Rule"`
	Limit        int    `json:"Limit"`
	NextToken    string `json:"NextToken"`
}

// events serves EventBridge's ListRules and ListTargetsByRule on the default bus.
func (e *Emulator) events(action string, body []byte) (any, error) {
	var in eventsInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{Code: "SerializationException", Message: err.Error()}
	}
	if in.EventBusName != "" && in.EventBusName != "default" {
		return nil, &apiError{Code: "ResourceNotFoundException", Message: "Event bus " + in.EventBusName + " does not exist."}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch action {
	case "ListRules":
		var rules []map[string]any
		for _, name := range sortedKeys(e.rules) {
			if !strings.HasPrefix(name, in.NamePrefix) {
				continue
			}
			r := e.rules[name]
			state := r.State
			if state == "" {
				state = "ENABLED"
			}
			rules = append(rules, map[string]any{"Name": r.Name, "Arn": "arn:aws:events:" + e.region + ":" + AccountID + ":rule/" + r.Name,
				"EventPattern": r.EventPattern, "State": state, "EventBusName": "default"})
		}
		items, next, err := page(rules, in.Limit, in.NextToken, e.opts.MaxPageSize)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"Rules": items}
		if next != "" {
			out["NextToken"] = next
		}
		return out, nil
	case "ListTargetsByRule":
		r, ok := e.rules[in.Rule]
		if !ok {
			return nil, &apiError{Code: "ResourceNotFoundException", Message: "Rule " + in.Rule + " does not exist on EventBus default."}
		}
		targets := make([]map[string]string, 0, len(r.Targets))
		for i, arn := range r.Targets {
			targets = append(targets, map[string]string{"Id": fmt.Sprintf("target-%d", i+1), "Arn": arn})
		}
		items, next, err := page(targets, in.Limit, in.NextToken, e.opts.MaxPageSize)
		if err != nil {
			return nil, err
		}
		out := map[string]any{"Targets": items}
		if next != "" {
			out["NextToken"] = next
		}
		return out, nil
	}
	return nil, &apiError{Code: "UnknownOperationException", Message: "the AWS emulator does not serve EventBridge " + action}
}

// queueAttributesLocked answers GetQueueAttributes: the queue's ARN, its policy when it has one,
// and its depth. Callers hold e.mu.
func (e *Emulator) queueAttributesLocked(name string) (any, error) {
	q, ok := e.queues[name]
	if !ok {
		return nil, &apiError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
	}
	attrs := map[string]string{"QueueArn": e.QueueARN(name), "ApproximateNumberOfMessages": fmt.Sprint(len(q.messages))}
	if q.policy != "" {
		attrs["Policy"] = q.policy
	}
	return map[string]any{"Attributes": attrs}, nil
}

// PutRolePolicy sets an inline policy of a role, e.g. Tailor's own role's.
func (e *Emulator) PutRolePolicy(role, name, document string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.addRoleLocked(role)
	r := e.world.roles[role]
	if r.policies == nil {
		r.policies = map[string]string{}
	}
	r.policies[name] = document
}

// DeleteRolePolicy removes an inline policy of a role.
func (e *Emulator) DeleteRolePolicy(role, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.world.roles[role]; ok {
		delete(r.policies, name)
	}
}

// AddInstanceProfile creates an instance profile holding the role (none when role is empty).
func (e *Emulator) AddInstanceProfile(name, role string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := &InstanceProfile{Name: name, ID: e.newID("AIPA"), Path: "/", Tags: map[string]string{}, Created: e.clock.Now()}
	if role != "" {
		e.addRoleLocked(role)
		p.Roles = []string{role}
	}
	e.world.profiles[name] = p
}

// iamPoliciesLocked serves the reads of a role's inline policies. Managed policies are not
// emulated: ListAttachedRolePolicies answers none. Callers hold e.mu.
func (e *Emulator) iamPoliciesLocked(action string, q query) (any, error) {
	r, ok := e.world.roles[q.get("RoleName")]
	if !ok {
		return nil, noSuchEntity("The role with name %s cannot be found.", q.get("RoleName"))
	}
	switch action {
	case "ListRolePolicies":
		return struct {
			PolicyNames []string `xml:"PolicyNames>member"`
			IsTruncated bool     `xml:"IsTruncated"`
		}{PolicyNames: sortedKeys(r.policies)}, nil
	case "GetRolePolicy":
		doc, ok := r.policies[q.get("PolicyName")]
		if !ok {
			return nil, noSuchEntity("The role policy with name %s cannot be found.", q.get("PolicyName"))
		}
		return struct {
			RoleName       string `xml:"RoleName"`
			PolicyName     string `xml:"PolicyName"`
			PolicyDocument string `xml:"PolicyDocument"`
		}{r.Name, q.get("PolicyName"), url.QueryEscape(doc)}, nil
	case "ListAttachedRolePolicies":
		return struct {
			IsTruncated bool `xml:"IsTruncated"`
		}{}, nil
	}
	return nil, &apiError{Code: "InvalidAction", Message: "the AWS emulator does not serve IAM " + action}
}

// SetSubnetTags replaces a subnet's tags, e.g. to take its discovery tag away.
func (e *Emulator) SetSubnetTags(id string, tags map[string]string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.world.subnets {
		if s.ID == id {
			s.Tags = copyTags(tags)
		}
	}
}
