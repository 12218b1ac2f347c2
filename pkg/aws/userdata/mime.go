package userdata

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// mimeBoundary is the boundary Tailor writes, the one Karpenter writes and its examples use.
const mimeBoundary = "//"

type mimePart struct {
	contentType string
	body        string
}

// customMIMEParts splits a node class's userData into parts: a MIME document keeps its parts; a
// bare document becomes one part: for nodeadm (AL2023) a NodeConfig when it reads as a YAML
// mapping (as Karpenter decides), a shell script otherwise. NodeConfig parts must decode as a
// NodeConfig: nodeadm would refuse them on the node, where nobody sees why it never joins.
func customMIMEParts(custom string, nodeadm bool) ([]mimePart, error) {
	trimmed := strings.TrimSpace(custom)
	var parts []mimePart
	switch {
	case trimmed == "":
		return nil, nil
	case isMIME(trimmed):
		var err error
		if parts, err = readMIME(trimmed); err != nil {
			return nil, err
		}
	case !nodeadm || strings.HasPrefix(trimmed, "#!"):
		parts = []mimePart{{contentType: contentTypeShell, body: custom}}
	case isYAMLMapping(trimmed) || looksLikeNodeConfig(trimmed):
		parts = []mimePart{{contentType: contentTypeNodeConfig, body: custom}}
	default:
		parts = []mimePart{{contentType: contentTypeShell, body: custom}}
	}
	for i, p := range parts {
		if ct, _, _ := mime.ParseMediaType(p.contentType); ct != contentTypeNodeConfig {
			continue
		}
		// Decoded into the same NodeConfig the node decodes, so a known field of the wrong type
		// (spec: 0) is refused here, not by nodeadm on a node that then never joins.
		var cfg nodeConfig
		if err := yaml.Unmarshal([]byte(p.body), &cfg); err != nil {
			return nil, fmt.Errorf("part %d (%s) is not a YAML NodeConfig: %w", i+1, contentTypeNodeConfig, err)
		}
	}
	return parts, nil
}

func isMIME(s string) bool {
	return strings.HasPrefix(s, "MIME-Version") || strings.HasPrefix(s, "Content-Type")
}

func isYAMLMapping(s string) bool {
	var doc map[string]any
	return yaml.Unmarshal([]byte(s), &doc) == nil && len(doc) > 0
}

// looksLikeNodeConfig catches a NodeConfig with a YAML mistake, which would otherwise be taken
// for a shell script and fail on the node instead of on the node class.
func looksLikeNodeConfig(s string) bool {
	return strings.Contains(s, "kind: NodeConfig") || strings.Contains(s, "node.eks.aws/")
}

func writeMIME(parts []mimePart) (string, error) {
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	boundary := safeBoundary(parts)
	if err := w.SetBoundary(boundary); err != nil {
		return "", err
	}
	fmt.Fprintf(&buf, "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=%q\r\n\r\n", boundary)
	for _, p := range parts {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {p.contentType}})
		if err != nil {
			return "", err
		}
		if _, err := io.WriteString(pw, p.body); err != nil {
			return "", err
		}
	}
	if err := w.Close(); err != nil {
		return "", err
	}
	return buf.String(), nil
}

// safeBoundary is mimeBoundary unless a part's body holds a line that would read as its
// delimiter (a script that echoes "--//", a part from a document with another boundary); then
// the first of //-1, //-2, ... that none holds, so the node reads the parts that were written.
func safeBoundary(parts []mimePart) string {
	for i := 0; ; i++ {
		b := mimeBoundary
		if i > 0 {
			b = fmt.Sprintf("%s-%d", mimeBoundary, i)
		}
		clash := false
		for _, p := range parts {
			if strings.Contains(p.body, "--"+b) {
				clash = true
				break
			}
		}
		if !clash {
			return b
		}
	}
}

// boundaryParam finds the boundary when the Content-Type does not parse as RFC 2045 wants, e.g.
// boundary=// unquoted ("/" must be quoted), which cloud-init reads all the same.
var boundaryParam = regexp.MustCompile(`(?i)boundary\s*=\s*"?([^";\s]+)"?`)

// readMIME reads a multipart document as leniently as cloud-init and Karpenter do: the closing
// delimiter ("--" after the last boundary) may be missing, and so may the last boundary line,
// and lines may end in CRLF or LF.
func readMIME(doc string) ([]mimePart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("reading MIME headers: %w", err)
	}
	header := msg.Header.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(header)
	boundary := params["boundary"]
	if err != nil {
		m := boundaryParam.FindStringSubmatch(header)
		if m == nil {
			return nil, fmt.Errorf("MIME Content-Type %q: %w", header, err)
		}
		mediaType, _, _ = strings.Cut(strings.TrimSpace(header), ";")
		boundary = m[1]
	}
	if !strings.HasPrefix(strings.ToLower(mediaType), "multipart/") || boundary == "" {
		return nil, fmt.Errorf("MIME user data must be multipart with a boundary, got Content-Type %q", header)
	}
	r := multipart.NewReader(msg.Body, boundary)
	var parts []mimePart
	for {
		p, err := r.NextPart()
		// The reader wraps io.EOF when the last delimiter is not a closing one: the document
		// simply ends there.
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(parts)+1, err)
		}
		body, err := io.ReadAll(p)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("reading MIME part %d: %w", len(parts)+1, err)
		}
		parts = append(parts, mimePart{contentType: p.Header.Get("Content-Type"), body: string(body)})
		if err != nil {
			break // the document ended inside this part: it is the last one
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("MIME user data has no part delimited by boundary %q", boundary)
	}
	return parts, nil
}
