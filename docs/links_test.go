// Package docs holds Tailor's documentation. Its one test keeps the Markdown honest: every
// relative link of every Markdown file in the repository must reach a file that exists, and every
// anchor a heading of that file, so that moving or renaming a page cannot rot the docs silently.
package docs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// skipDirs are folders whose Markdown is not ours to keep (build output) or not Markdown meant
// for readers (fixtures).
var skipDirs = map[string]bool{".git": true, "bin": true, "node_modules": true, "testdata": true}

func TestMarkdownLinksResolve(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	files := markdownFiles(t, root)
	if len(files) < 10 {
		t.Fatalf("found %d Markdown files under %s; expected the README and the docs tree", len(files), root)
	}
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		anchors[f] = headingAnchors(t, f)
	}
	var broken []string
	for _, f := range files {
		for _, l := range relativeLinks(t, f) {
			if msg := check(f, l, anchors); msg != "" {
				rel, _ := filepath.Rel(root, f)
				broken = append(broken, fmt.Sprintf("%s:%d: %s: %s", rel, l.line, l.target, msg))
			}
		}
	}
	for _, b := range broken {
		t.Error(b)
	}
}

// check says what is wrong with one link, or "" when it resolves.
func check(from string, l link, anchors map[string]map[string]bool) string {
	path, anchor, _ := strings.Cut(l.target, "#")
	target := from
	if path != "" {
		target = filepath.Join(filepath.Dir(from), filepath.FromSlash(path))
		if _, err := os.Stat(target); err != nil {
			return "no such file"
		}
	}
	if anchor == "" || !strings.HasSuffix(target, ".md") {
		return ""
	}
	known, ok := anchors[target]
	if !ok {
		return "links into a Markdown file this test does not read"
	}
	if !known[anchor] {
		return fmt.Sprintf("no heading with anchor %q", anchor)
	}
	return ""
}

func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// link is one relative link and the line it is on.
type link struct {
	target string
	line   int
}

var (
	linkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	codeSpan    = regexp.MustCompile("`[^`]*`")
	heading     = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	// notInAnchor is what GitHub drops from a heading's text to make its anchor.
	notInAnchor = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
)

// relativeLinks lists the links outside code that point into the repository.
func relativeLinks(t *testing.T, file string) []link {
	t.Helper()
	var out []link
	eachProseLine(t, file, func(n int, line string) {
		for _, m := range linkPattern.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{target: target, line: n})
		}
	})
	return out
}

// headingAnchors are the anchors GitHub gives a file's headings: lower case, punctuation dropped,
// spaces as hyphens, and a repeated anchor numbered from -1.
func headingAnchors(t *testing.T, file string) map[string]bool {
	t.Helper()
	seen := map[string]int{}
	out := map[string]bool{}
	eachProseLine(t, file, func(_ int, line string) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			return
		}
		a := strings.ReplaceAll(notInAnchor.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	})
	return out
}

// eachProseLine calls fn for every line outside fenced code blocks, numbered from 1.
func eachProseLine(t *testing.T, file string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	fenced := false
	for n := 1; s.Scan(); n++ {
		line := s.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			fn(n, line)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
}
