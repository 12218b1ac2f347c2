package userdata

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
)

// The fuzz targets below read spec.userData, which users write by hand, the way a booting node
// would. Their seeds are the documented shapes of shapes_test.go; the failures they found are
// kept in testdata/fuzz/<target>/ and run with the unit tests.

var fuzzFamilies = []string{awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket, awsv1.AMIFamilyAL2}

func addUserDataSeeds(f *testing.F) {
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	seeds := []string{"", al2023NodeConfig, al2023MIMEUnclosed, crlf(al2023MIMEUnclosed),
		strings.Replace(al2023MIMEUnclosed, `boundary="//"`, "boundary=//", 1),
		strings.TrimSuffix(al2023MIMEUnclosed, "--//\n"), al2Script, al2MIME, bottlerocketSettings,
		bottlerocketRicher, crlf(bottlerocketSettings), "#!/bin/bash\necho --//\n",
		"[settings.kubernetes]\nmax-pods = twelve", "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: [unclosed"}
	for i, s := range seeds {
		f.Add(uint8(i), s)
	}
}

// FuzzRenderUserData merges arbitrary spec.userData for each family. Whatever a user writes:
// Validate and Render agree; a refusal names spec.userData; what Render writes, the node reads
// (it joins Tailor's cluster, with the unregistered taint no user data can remove); the same
// input gives the same bytes (launch template names are hashes of them); and the user's own
// parts or settings come through unchanged.
func FuzzRenderUserData(f *testing.F) {
	addUserDataSeeds(f)
	f.Fuzz(func(t *testing.T, pick uint8, custom string) {
		family := fuzzFamilies[int(pick)%len(fuzzFamilies)]
		in := testNode()
		data, err := Render(family, in, custom)
		verr := Validate(family, custom)
		if strings.TrimSpace(custom) != "" && (err == nil) != (verr == nil) {
			t.Fatalf("%s: Render error %v but Validate error %v", family, err, verr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "spec.userData") {
				t.Fatalf("%s: error does not name spec.userData: %v", family, err)
			}
			return
		}
		again, err := Render(family, in, custom)
		if err != nil || again != data {
			t.Fatalf("%s: a second Render differs (err %v)", family, err)
		}
		if family == awsv1.AMIFamilyAL2 && strings.Contains(custom, bootstrapScript) {
			return // the user's own bootstrap.sh call is theirs to get right
		}
		got, err := Parse(data)
		if err != nil {
			t.Fatalf("%s: the node cannot read the user data Tailor wrote: %v\n%s", family, err, data)
		}
		if !hasUnregistered(got) {
			t.Fatalf("%s: the node registers without the unregistered taint: %v", family, got.Taints)
		}
		switch family {
		case awsv1.AMIFamilyBottlerocket:
			// One settings document: Tailor's values win over the user's.
			if got.ClusterName != in.ClusterName || got.APIServerEndpoint != in.APIServerEndpoint || got.MaxPods != in.MaxPods {
				t.Fatalf("bottlerocket: the node joins %q at %q with max pods %d", got.ClusterName, got.APIServerEndpoint, got.MaxPods)
			}
			for k, v := range in.Labels {
				if got.Labels[k] != v {
					t.Fatalf("bottlerocket: label %s=%q, want %q", k, got.Labels[k], v)
				}
			}
		default:
			// MIME: the user's parts travel as they were written, beside Tailor's.
			want, err := customMIMEParts(custom, family == awsv1.AMIFamilyAL2023)
			if err != nil {
				t.Fatal(err)
			}
			parts, err := readMIME(strings.TrimSpace(data))
			if err != nil {
				t.Fatalf("%s: reading the merged document: %v", family, err)
			}
			if len(parts) != len(want)+1 {
				t.Fatalf("%s: merged document has %d parts, want %d (Tailor's and %d of the user's)\n%s", family, len(parts), len(want)+1, len(want), data)
			}
			user := parts[1:]
			if family == awsv1.AMIFamilyAL2 {
				user = parts[:len(parts)-1]
			}
			for i := range want {
				if user[i].body != want[i].body {
					t.Fatalf("%s: user part %d changed from %q to %q", family, i+1, want[i].body, user[i].body)
				}
			}
		}
	})
}

// FuzzParseUserData reads arbitrary user data as the emulated node's bootstrap does (a Custom
// AMI's user data reaches it unchanged). It must never panic, and what it reads from Tailor's
// own rendering of the result must be the same node.
func FuzzParseUserData(f *testing.F) {
	addUserDataSeeds(f)
	for _, family := range fuzzFamilies {
		data, err := Render(family, testNode(), "")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(0), data)
	}
	f.Fuzz(func(t *testing.T, _ uint8, data string) {
		n, err := Parse(data)
		if err != nil {
			return
		}
		for _, family := range fuzzFamilies {
			if strings.ContainsAny(n.ClusterName+n.APIServerEndpoint+n.CABundle, "'\"\n\\") && family == awsv1.AMIFamilyAL2 {
				continue // bootstrap.sh's arguments are single-quoted words
			}
			out, err := Render(family, n, "")
			if err != nil {
				t.Fatalf("%s: rendering what was read: %v", family, err)
			}
			back, err := Parse(out)
			if err != nil {
				t.Fatalf("%s: reading back what was rendered: %v\n%s", family, err, out)
			}
			if back.ClusterName != n.ClusterName || back.APIServerEndpoint != n.APIServerEndpoint {
				t.Fatalf("%s: cluster %q at %q became %q at %q", family, n.ClusterName, n.APIServerEndpoint, back.ClusterName, back.APIServerEndpoint)
			}
		}
	})
}

// FuzzTOML checks the Bottlerocket settings reader and writer: a document that parses is
// written in TOML that parses back to the same settings, and that writing it again gives the
// same bytes; an error names the line.
func FuzzTOML(f *testing.F) {
	for _, s := range []string{bottlerocketSettings, bottlerocketRicher, "[settings.kubernetes]\n\"a.b\" = 'x'\n",
		"x = [1, 2.5, true, \"s\", { a = 1 }]\n[empty]\n", "k = \"tab\\there\"\n", "[a]\nb = 1_000\nc = -3.0e2\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		parsed, err := parseTOML(doc)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "line ") && !strings.Contains(err.Error(), "UTF-8") {
				t.Fatalf("error does not name the line: %v", err)
			}
			return
		}
		out := writeTOML(parsed)
		if !utf8.ValidString(out) {
			t.Fatalf("wrote invalid UTF-8: %q", out)
		}
		back, err := parseTOML(out)
		if err != nil {
			t.Fatalf("cannot read what was written: %v\n%s", err, out)
		}
		if !tomlEqual(parsed, back) {
			t.Fatalf("round trip changed the settings:\n%#v\n%#v\nwritten:\n%s", parsed, back, out)
		}
		if again := writeTOML(back); again != out {
			t.Fatalf("writing twice differs:\n%s\n%s", out, again)
		}
	})
}

// tomlEqual is reflect.DeepEqual, except that NaN equals NaN.
func tomlEqual(a, b any) bool {
	switch a := a.(type) {
	case float64:
		bf, ok := b.(float64)
		return ok && (a == bf || math.IsNaN(a) && math.IsNaN(bf))
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if w, ok := bm[k]; !ok || !tomlEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !tomlEqual(a[i], bl[i]) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}
