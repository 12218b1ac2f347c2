package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The interruption queue: it exists, its access policy lets EventBridge send to it, and rules
// send it each of the four kinds of notice Tailor handles.

// interruptionDetailTypes are the EventBridge detail-types of the notices Tailor handles, with the
// name Karpenter's CloudFormation template gives the rule for each.
var interruptionDetailTypes = []struct{ detailType, source, rule string }{
	{"EC2 Spot Instance Interruption Warning", "aws.ec2", "spot interruption"},
	{"EC2 Instance Rebalance Recommendation", "aws.ec2", "rebalance recommendation"},
	{"EC2 Instance State-change Notification", "aws.ec2", "instance state change"},
	{"AWS Health Event", "aws.health", "scheduled change"},
}

// senders are the service principals the queue's policy must let send: EventBridge delivers the
// notices, and SQS itself moves messages (Karpenter's template allows both).
var senders = []string{"events.amazonaws.com", "sqs.amazonaws.com"}

func checkInterruptionQueue(ctx context.Context, env *Env) []Result {
	const check = "interruption-queue"
	name := env.Settings.InterruptionQueue
	if name == "" {
		return []Result{warn(check, "", "create the queue and rules (Karpenter's CloudFormation template does) and set settings.interruptionQueue",
			"no interruption queue is configured (--interruption-queue): spot interruptions come without the two minutes' warning")}
	}
	if env.AWS == nil {
		return env.noAWS(check)
	}
	obj := "queue " + name
	client := sqs.NewFromConfig(*env.AWS)
	url, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name)})
	if err != nil {
		if iamCode(err) == "QueueDoesNotExist" || iamCode(err) == "AWS.SimpleQueueService.NonExistentQueue" {
			return []Result{fail(check, obj, "create it in "+env.AWS.Region+" (Karpenter's CloudFormation template), or correct settings.interruptionQueue", "the queue does not exist")}
		}
		return []Result{fail(check, obj, "allow sqs:GetQueueUrl to the identity running tailor doctor", "finding the queue: %v", err)}
	}
	attrs, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url.QueueUrl,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn, sqstypes.QueueAttributeNamePolicy}})
	if err != nil {
		return []Result{fail(check, obj, "allow sqs:GetQueueAttributes to the identity running tailor doctor", "reading the queue's attributes: %v", err)}
	}
	arn := attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]
	out := []Result{ok(check, obj, "%s", arn), queuePolicy(obj, arn, attrs.Attributes[string(sqstypes.QueueAttributeNamePolicy)])}
	return append(out, queueRules(ctx, eventbridge.NewFromConfig(*env.AWS), obj, arn)...)
}

// policyDocument is the part of an IAM or SQS policy the checks read. Action, Resource and
// Principal's Service may each be a string or a list.
type policyDocument struct {
	Statement statements `json:"Statement"`
}

type statement struct {
	Effect    string          `json:"Effect"`
	Action    json.RawMessage `json:"Action"`
	Resource  json.RawMessage `json:"Resource"`
	Principal json.RawMessage `json:"Principal"`
	Condition json.RawMessage `json:"Condition"`
}

// statements is a policy's Statement: a list, or one statement on its own, as IAM allows.
type statements []statement

func (s *statements) UnmarshalJSON(raw []byte) error {
	var one statement
	if err := json.Unmarshal(raw, &one); err == nil {
		*s = statements{one}
		return nil
	}
	var many []statement
	if err := json.Unmarshal(raw, &many); err != nil {
		return err
	}
	*s = many
	return nil
}

// stringList decodes a string-or-list field.
func stringList(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(raw, &many)
	return many
}

// queuePolicy: each sender is allowed sqs:SendMessage on the queue.
func queuePolicy(obj, arn, raw string) Result {
	const check = "interruption-policy"
	fix := `give the queue the policy of Karpenter's template: Allow sqs:SendMessage to Principal {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]} on ` + arn
	if raw == "" {
		return fail(check, obj, fix, "the queue has no access policy: EventBridge cannot deliver notices to it")
	}
	var doc policyDocument
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		return fail(check, obj, fix, "the queue's policy does not parse: %v", err)
	}
	allowed := map[string]bool{}
	for _, st := range doc.Statement {
		if st.Effect != "Allow" || !matchesAny(stringList(st.Action), "sqs:SendMessage") {
			continue
		}
		if res := stringList(st.Resource); len(res) > 0 && !matchesAny(res, arn) {
			continue
		}
		var principal struct {
			Service json.RawMessage `json:"Service"`
		}
		if json.Unmarshal(st.Principal, &principal) == nil {
			for _, s := range stringList(principal.Service) {
				allowed[s] = true
			}
		}
		if string(st.Principal) == `"*"` {
			for _, s := range senders {
				allowed[s] = true
			}
		}
	}
	var missing []string
	for _, s := range senders {
		if !allowed[s] {
			missing = append(missing, s)
		}
	}
	if len(missing) > 0 {
		return fail(check, obj, fix, "the queue's policy does not let %s send to it", strings.Join(missing, " and "))
	}
	return ok(check, obj, "%s may send to the queue", strings.Join(senders, " and "))
}

// matchesAny says whether any of the patterns (IAM wildcards * and ?) matches s, ignoring case
// as IAM does for actions.
func matchesAny(patterns []string, s string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return wildcardMatch(strings.ToLower(p), strings.ToLower(s)) })
}

func wildcardMatch(p, s string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for i := len(s); i >= 0; i-- {
				if wildcardMatch(p[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return s == ""
}

// eventPattern is the part of a rule's pattern that says which notices it matches.
type eventPattern struct {
	Source     []string `json:"source"`
	DetailType []string `json:"detail-type"`
}

// queueRules: for each kind of notice an enabled rule matches it and targets the queue.
func queueRules(ctx context.Context, client *eventbridge.Client, obj, arn string) []Result {
	const check = "interruption-rules"
	covered := map[string]string{}
	in := &eventbridge.ListRulesInput{}
	for {
		page, err := client.ListRules(ctx, in)
		if err != nil {
			return []Result{fail(check, obj, "allow events:ListRules and events:ListTargetsByRule to the identity running tailor doctor", "listing EventBridge rules: %v", err)}
		}
		for _, r := range page.Rules {
			if r.State != "ENABLED" || r.EventPattern == nil {
				continue
			}
			var pattern eventPattern
			if json.Unmarshal([]byte(aws.ToString(r.EventPattern)), &pattern) != nil {
				continue
			}
			targets, err := client.ListTargetsByRule(ctx, &eventbridge.ListTargetsByRuleInput{Rule: r.Name})
			if err != nil {
				return []Result{fail(check, obj, "allow events:ListTargetsByRule to the identity running tailor doctor", "listing the targets of rule %s: %v", aws.ToString(r.Name), err)}
			}
			if !slices.ContainsFunc(targets.Targets, func(t ebtypes.Target) bool { return aws.ToString(t.Arn) == arn }) {
				continue
			}
			for _, d := range interruptionDetailTypes {
				if slices.Contains(pattern.DetailType, d.detailType) && (len(pattern.Source) == 0 || slices.Contains(pattern.Source, d.source)) {
					covered[d.detailType] = aws.ToString(r.Name)
				}
			}
		}
		if page.NextToken == nil {
			break
		}
		in.NextToken = page.NextToken
	}
	var out []Result
	for _, d := range interruptionDetailTypes {
		if rule, ok := covered[d.detailType]; ok {
			out = append(out, Result{Check: check, Status: OK, Object: obj, Message: fmt.Sprintf("%s notices (%q) arrive through rule %s", d.rule, d.detailType, rule)})
			continue
		}
		out = append(out, fail(check, obj,
			fmt.Sprintf(`create an EventBridge rule with pattern {"source":["%s"],"detail-type":["%s"]} targeting %s`, d.source, d.detailType, arn),
			"no enabled EventBridge rule sends %s notices (%q) to the queue", d.rule, d.detailType))
	}
	return out
}
