package emulator

import (
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	ec2Version   = "2016-11-15"
	ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"
)

// apiError is an AWS error as the SDK decodes it: a code it matches on and a message for people.
type apiError struct {
	Code    string
	Message string
	// Status is the HTTP status; 400 when zero.
	Status int
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func asAPIError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	return &apiError{Code: "InternalError", Message: err.Error(), Status: http.StatusInternalServerError}
}

func invalidParameter(format string, args ...any) *apiError {
	return &apiError{Code: "InvalidParameterValue", Message: fmt.Sprintf(format, args...)}
}

// query is a decoded Query-protocol form: flat keys such as Filter.1.Value.2.
type query map[string]string

func parseQuery(body string) (query, error) {
	values, err := url.ParseQuery(body)
	if err != nil {
		return nil, err
	}
	q := query{}
	for k, v := range values {
		if len(v) > 0 {
			q[k] = v[0]
		}
	}
	return q, nil
}

func (q query) get(key string) string { return q[key] }

// list returns prefix.1, prefix.2, ... until the first gap, as the SDK numbers list members.
func (q query) list(prefix string) []string {
	var out []string
	for i := 1; ; i++ {
		v, ok := q[prefix+"."+strconv.Itoa(i)]
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

// sub returns the members under prefix, with the prefix stripped.
func (q query) sub(prefix string) query {
	out := query{}
	for k, v := range q {
		if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			out[rest] = v
		}
	}
	return out
}

// items returns the structures prefix.1.*, prefix.2.*, ... until the first gap.
func (q query) items(prefix string) []query {
	var out []query
	for i := 1; ; i++ {
		item := q.sub(prefix + "." + strconv.Itoa(i))
		if len(item) == 0 {
			return out
		}
		out = append(out, item)
	}
}

func (q query) int(key string, def int) (int, error) {
	v, ok := q[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, invalidParameter("%s must be an integer, got %q", key, v)
	}
	return n, nil
}

// ec2Output is embedded in every EC2 response, which carries its request ID in the body.
type ec2Output struct {
	RequestID string `xml:"requestId"`
}

func (o *ec2Output) setRequestID(id string) { o.RequestID = id }

type ec2Response interface{ setRequestID(string) }

func writeEC2(w http.ResponseWriter, reqID, action string, out ec2Response) {
	out.setRequestID(reqID)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	_, _ = io.WriteString(w, xml.Header)
	start := xml.StartElement{Name: xml.Name{Local: action + "Response"},
		Attr: []xml.Attr{{Name: xml.Name{Local: "xmlns"}, Value: ec2Namespace}}}
	if err := xml.NewEncoder(w).EncodeElement(out, start); err != nil {
		// Headers are sent; all that is left is to say why the body is short.
		_, _ = io.WriteString(w, "<!-- "+err.Error()+" -->")
	}
}

type ec2ErrorBody struct {
	XMLName   xml.Name `xml:"Response"`
	Code      string   `xml:"Errors>Error>Code"`
	Message   string   `xml:"Errors>Error>Message"`
	RequestID string   `xml:"RequestID"`
}

func writeEC2Error(w http.ResponseWriter, reqID string, err *apiError) {
	status := err.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, xml.Header)
	_ = xml.NewEncoder(w).Encode(ec2ErrorBody{Code: err.Code, Message: err.Message, RequestID: reqID})
}

func writeJSON(w http.ResponseWriter, out any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// writeJSONError writes the AWS JSON error shape; the query-error header is what SQS's
// query-compatible clients read the code from.
func writeJSONError(w http.ResponseWriter, err *apiError) {
	status := err.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", err.Code)
	w.Header().Set("x-amzn-query-error", err.Code+";Sender")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": err.Code, "message": err.Message})
}

// ec2Time formats a timestamp as EC2's XML does.
func ec2Time(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// page cuts items to one page. The token is the offset, opaque to callers as EC2's are.
func page[T any](items []T, maxResults int, token string, limit int) ([]T, string, error) {
	start := 0
	if token != "" {
		raw, err := base64.RawURLEncoding.DecodeString(token)
		if err == nil {
			start, err = strconv.Atoi(string(raw))
		}
		if err != nil || start < 0 || start > len(items) {
			return nil, "", &apiError{Code: "InvalidNextToken", Message: fmt.Sprintf("the token %q is invalid", token)}
		}
	}
	size := len(items) - start
	if maxResults > 0 && maxResults < size {
		size = maxResults
	}
	if limit > 0 && limit < size {
		size = limit
	}
	end := start + size
	next := ""
	if end < len(items) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return items[start:end], next, nil
}

type tagXML struct {
	Key   string `xml:"key"`
	Value string `xml:"value"`
}

func tagsXML(tags map[string]string) []tagXML {
	out := make([]tagXML, 0, len(tags))
	for _, k := range sortedKeys(tags) {
		out = append(out, tagXML{Key: k, Value: tags[k]})
	}
	return out
}

// tagSpecs reads TagSpecification.N.{ResourceType,Tag.M.{Key,Value}} into tags per resource type.
func tagSpecs(q query, prefix string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, spec := range q.items(prefix) {
		rt := spec.get("ResourceType")
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for _, tag := range spec.items("Tag") {
			out[rt][tag.get("Key")] = tag.get("Value")
		}
	}
	return out
}
