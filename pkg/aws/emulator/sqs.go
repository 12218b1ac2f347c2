package emulator

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// queue is an SQS standard queue. Visibility timeouts run on the emulator's clock so tests can
// make an undeleted message reappear; long polls wait in real time, as they are network waits.
type queue struct {
	name     string
	messages []*sqsMessage
	// arrived is closed and replaced whenever a message is sent, waking long polls.
	arrived chan struct{}
	// policy is the queue's access policy (a JSON document), empty when it has none.
	policy string
}

type sqsMessage struct {
	id, body, receipt string
	visibleAt         time.Time
	receives          int
	sent              time.Time
}

// CreateQueue creates a queue (if missing) and returns its URL.
func (e *Emulator) CreateQueue(name string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.queues[name]; !ok {
		e.queues[name] = &queue{name: name, arrived: make(chan struct{})}
	}
	return e.queueURL(name)
}

func (e *Emulator) queueURL(name string) string {
	return e.server.URL + "/" + AccountID + "/" + name
}

// SendMessage puts a message on the queue, as EventBridge would, and returns its ID.
func (e *Emulator) SendMessage(queueName, body string) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sendLocked(queueName, body)
}

func (e *Emulator) sendLocked(queueName, body string) (string, error) {
	q, ok := e.queues[queueName]
	if !ok {
		return "", &apiError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
	}
	m := &sqsMessage{id: e.newID("msg"), body: body, visibleAt: e.clock.Now(), sent: e.clock.Now()}
	q.messages = append(q.messages, m)
	close(q.arrived)
	q.arrived = make(chan struct{})
	return m.id, nil
}

// QueueDepth returns how many messages are waiting (visible) and being processed (in flight).
func (e *Emulator) QueueDepth(queueName string) (visible, inFlight int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	q, ok := e.queues[queueName]
	if !ok {
		return 0, 0
	}
	now := e.clock.Now()
	for _, m := range q.messages {
		if m.visibleAt.After(now) {
			inFlight++
		} else {
			visible++
		}
	}
	return visible, inFlight
}

type sqsInput struct {
	QueueName           string `json:"QueueName"`
	QueueURL            string `json:"QueueUrl"`
	MaxNumberOfMessages int    `json:"MaxNumberOfMessages"`
	WaitTimeSeconds     int    `json:"WaitTimeSeconds"`
	VisibilityTimeout   *int   `json:"VisibilityTimeout"`
	ReceiptHandle       string `json:"ReceiptHandle"`
	MessageBody         string `json:"MessageBody"`
	Entries             []struct {
		ID            string `json:"Id"`
		ReceiptHandle string `json:"ReceiptHandle"`
	} `json:"Entries"`
}

func (e *Emulator) sqs(ctx context.Context, action string, body []byte) (any, error) {
	var in sqsInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{Code: "SerializationException", Message: err.Error()}
	}
	name := in.QueueURL[strings.LastIndex(in.QueueURL, "/")+1:]
	switch action {
	case "GetQueueUrl":
		e.mu.Lock()
		defer e.mu.Unlock()
		if _, ok := e.queues[in.QueueName]; !ok {
			return nil, &apiError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
		}
		return map[string]string{"QueueUrl": e.queueURL(in.QueueName)}, nil
	case "SendMessage":
		e.mu.Lock()
		defer e.mu.Unlock()
		id, err := e.sendLocked(name, in.MessageBody)
		if err != nil {
			return nil, err
		}
		return map[string]string{"MessageId": id, "MD5OfMessageBody": md5Hex(in.MessageBody)}, nil
	case "ReceiveMessage":
		return e.receive(ctx, name, in)
	case "DeleteMessage":
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.deleteLocked(name, in.ReceiptHandle)
	case "DeleteMessageBatch":
		return e.deleteBatch(name, in)
	case "GetQueueAttributes":
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.queueAttributesLocked(name)
	}
	return nil, &apiError{Code: "UnknownOperationException", Message: "the AWS emulator does not serve SQS " + action}
}

type sqsMessageJSON struct {
	MessageID     string            `json:"MessageId"`
	ReceiptHandle string            `json:"ReceiptHandle"`
	MD5OfBody     string            `json:"MD5OfBody"`
	Body          string            `json:"Body"`
	Attributes    map[string]string `json:"Attributes,omitempty"`
}

// receive long-polls for up to WaitTimeSeconds until a message is visible.
func (e *Emulator) receive(ctx context.Context, name string, in sqsInput) (any, error) {
	maxMessages := in.MaxNumberOfMessages
	if maxMessages == 0 {
		maxMessages = 1
	}
	if maxMessages < 1 || maxMessages > 10 {
		return nil, &apiError{Code: "InvalidParameterValue", Message: "MaxNumberOfMessages must be between 1 and 10"}
	}
	visibility := 30 * time.Second
	if in.VisibilityTimeout != nil {
		visibility = time.Duration(*in.VisibilityTimeout) * time.Second
	}
	deadline := time.Now().Add(time.Duration(in.WaitTimeSeconds) * time.Second)
	for {
		e.mu.Lock()
		q, ok := e.queues[name]
		if !ok {
			e.mu.Unlock()
			return nil, &apiError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
		}
		now := e.clock.Now()
		var got []sqsMessageJSON
		for _, m := range q.messages {
			if len(got) == maxMessages || m.visibleAt.After(now) {
				continue
			}
			m.receives++
			m.visibleAt = now.Add(visibility)
			m.receipt = fmt.Sprintf("%s#%d", m.id, m.receives)
			got = append(got, sqsMessageJSON{MessageID: m.id, ReceiptHandle: m.receipt, MD5OfBody: md5Hex(m.body), Body: m.body,
				Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives),
					"SentTimestamp": strconv.FormatInt(m.sent.UnixMilli(), 10)}})
		}
		arrived := q.arrived
		e.mu.Unlock()
		if len(got) > 0 || !time.Now().Before(deadline) {
			return map[string]any{"Messages": got}, nil
		}
		// Wake on a send, or now and then because visibility runs on a clock that tests move.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-arrived:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// deleteBatch deletes up to 10 messages; each entry succeeds or fails on its own, as in SQS.
func (e *Emulator) deleteBatch(name string, in sqsInput) (any, error) {
	if len(in.Entries) == 0 {
		return nil, &apiError{Code: "AWS.SimpleQueueService.EmptyBatchRequest", Message: "There should be at least one DeleteMessageBatchRequestEntry in the request."}
	}
	if len(in.Entries) > 10 {
		return nil, &apiError{Code: "AWS.SimpleQueueService.TooManyEntriesInBatchRequest", Message: fmt.Sprintf("Maximum number of entries per request are 10. You have sent %d.", len(in.Entries))}
	}
	seen := map[string]bool{}
	for _, en := range in.Entries {
		if seen[en.ID] {
			return nil, &apiError{Code: "AWS.SimpleQueueService.BatchEntryIdsNotDistinct", Message: fmt.Sprintf("Id %s repeated.", en.ID)}
		}
		seen[en.ID] = true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	successful, failed := []map[string]string{}, []map[string]any{}
	for _, en := range in.Entries {
		if _, err := e.deleteLocked(name, en.ReceiptHandle); err != nil {
			ae, ok := err.(*apiError)
			if !ok || ae.Code == "QueueDoesNotExist" {
				return nil, err
			}
			failed = append(failed, map[string]any{"Id": en.ID, "Code": ae.Code, "Message": ae.Message, "SenderFault": true})
			continue
		}
		successful = append(successful, map[string]string{"Id": en.ID})
	}
	return map[string]any{"Successful": successful, "Failed": failed}, nil
}

func (e *Emulator) deleteLocked(name, receipt string) (any, error) {
	q, ok := e.queues[name]
	if !ok {
		return nil, &apiError{Code: "QueueDoesNotExist", Message: "The specified queue does not exist."}
	}
	for i, m := range q.messages {
		if m.receipt != "" && m.receipt == receipt {
			q.messages = append(q.messages[:i], q.messages[i+1:]...)
			return map[string]any{}, nil
		}
	}
	return nil, &apiError{Code: "ReceiptHandleIsInvalid", Message: fmt.Sprintf("The input receipt handle %q is not a valid receipt handle.", receipt)}
}

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}
