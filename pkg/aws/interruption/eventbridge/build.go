package eventbridge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
)

// Notice describes an EventBridge notice to build, as EC2 or AWS Health would send it.
type Notice struct {
	// Kind is one of the kinds Parse returns. For KindInstanceStopping and KindInstanceTerminating
	// State says which state change ("stopping" and "shutting-down" when empty).
	Kind       Kind
	InstanceID string
	State      string
	Region     string
	Account    string
	Time       time.Time
	// Start is when a scheduled change begins (a day after Time when zero).
	Start time.Time
}

// Message renders the notice as the body of the SQS message EventBridge delivers, in the formats
// of ../shared/reference/karpenter-aws.md. It lets people and tests inject interruptions into a
// queue, e.g. the emulator's, through the real SQS API.
func Message(n Notice) (string, error) {
	if n.Region == "" {
		n.Region = "us-west-2"
	}
	if n.Account == "" {
		n.Account = "000000000000"
	}
	if n.Time.IsZero() {
		n.Time = time.Now()
	}
	arn := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", n.Region, n.Account, n.InstanceID)
	env := map[string]any{"version": "0", "id": string(uuid.NewUUID()), "source": "aws.ec2", "account": n.Account,
		"time": n.Time.UTC().Format(time.RFC3339), "region": n.Region, "resources": []string{arn}}
	switch n.Kind {
	case KindSpotInterruption:
		env["detail-type"] = "EC2 Spot Instance Interruption Warning"
		env["detail"] = map[string]string{"instance-id": n.InstanceID, "instance-action": "terminate"}
	case KindCapacityReservationInterruption:
		env["detail-type"] = "EC2 Capacity Reservation Instance Interruption Warning"
		env["detail"] = map[string]string{"instance-id": n.InstanceID, "instance-action": "terminate"}
	case KindRebalanceRecommendation:
		env["detail-type"] = "EC2 Instance Rebalance Recommendation"
		env["detail"] = map[string]string{"instance-id": n.InstanceID}
	case KindInstanceStopping, KindInstanceTerminating:
		state := n.State
		if state == "" {
			state = map[Kind]string{KindInstanceStopping: "stopping", KindInstanceTerminating: "shutting-down"}[n.Kind]
		}
		env["detail-type"] = "EC2 Instance State-change Notification"
		env["detail"] = map[string]string{"instance-id": n.InstanceID, "state": state}
	case KindScheduledChange:
		start := n.Start
		if start.IsZero() {
			start = n.Time.Add(24 * time.Hour)
		}
		env["source"], env["detail-type"] = "aws.health", "AWS Health Event"
		env["resources"] = []string{n.InstanceID}
		env["detail"] = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/%s", n.Region, uuid.NewUUID()),
			"service":           "EC2",
			"eventTypeCode":     "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED",
			"eventTypeCategory": "scheduledChange",
			"startTime":         start.UTC().Format(http.TimeFormat),
			"endTime":           start.Add(2 * time.Hour).UTC().Format(http.TimeFormat),
			"affectedEntities":  []map[string]string{{"entityValue": n.InstanceID}},
		}
	default:
		return "", fmt.Errorf("no notice of kind %q", n.Kind)
	}
	body, err := json.Marshal(env)
	return string(body), err
}
