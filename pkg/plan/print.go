package plan

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the result for people: the NodeClaims as a table, then each claim's pods, the
// pods that cannot be placed with the reason per NodePool, what was ignored, and the totals.
func (r *Result) WriteText(w io.Writer) error {
	p := &printer{w: w}
	p.printf("Catalog: %s\n", r.Catalog)
	p.printf("Pending pods of scheduler %s: %d\n\n", r.SchedulerName, r.Pending)
	if len(r.NodeClaims) > 0 {
		p.printf("NodeClaims to launch (%d):\n", len(r.NodeClaims))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		table := &printer{w: tw}
		table.printf("#\tNODEPOOL\tINSTANCE TYPE\tZONE\tCAPACITY TYPE\t$/HOUR\tOPTIONS\tPODS\tCPU REQ/ALLOC\tMEMORY REQ/ALLOC\n")
		for i, c := range r.NodeClaims {
			table.printf("%d\t%s\t%s\t%s\t%s\t%.4f\t%d\t%d\t%s/%s\t%s/%s\n", i+1, c.NodePool, c.InstanceType, c.Zone, c.CapacityType,
				c.PricePerHour, c.Options, len(c.Pods), or0(c.Requests["cpu"]), c.Allocatable["cpu"], or0(c.Requests["memory"]), c.Allocatable["memory"])
		}
		if table.err != nil {
			return table.err
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		p.printf("\n")
		for i, c := range r.NodeClaims {
			p.printf("NodeClaim %d pods: %s\n", i+1, strings.Join(c.Pods, ", "))
			if len(c.DaemonSets) > 0 {
				p.printf("NodeClaim %d DaemonSets: %s\n", i+1, strings.Join(c.DaemonSets, ", "))
			}
		}
		p.printf("\n")
	}
	if len(r.FitsExisting) > 0 {
		p.printf("Pods that fit existing nodes (%d): %s\n\n", len(r.FitsExisting), strings.Join(r.FitsExisting, ", "))
	}
	if len(r.Unplaceable) > 0 {
		p.printf("Pods no NodePool can hold (%d):\n", len(r.Unplaceable))
		for _, u := range r.Unplaceable {
			p.printf("  %s\n", u.Pod)
			for _, why := range u.Reasons {
				if why.NodePool == "" {
					p.printf("    %s\n", why.Reason)
				} else {
					p.printf("    NodePool %s: %s\n", why.NodePool, why.Reason)
				}
			}
		}
		p.printf("\n")
	}
	if len(r.Ignored) > 0 {
		p.printf("Pods not planned (%d):\n", len(r.Ignored))
		for _, i := range r.Ignored {
			p.printf("  %s: %s\n", i.Pod, i.Reason)
		}
		p.printf("\n")
	}
	if len(r.Skipped) > 0 {
		p.printf("Objects not read (%d):\n", len(r.Skipped))
		for _, s := range r.Skipped {
			p.printf("  %s %s (%s): %s\n", s.Kind, s.Name, s.Source, s.Reason)
		}
		p.printf("\n")
	}
	for _, warning := range r.Warnings {
		p.printf("Warning: %s\n", warning)
	}
	if len(r.Warnings) > 0 {
		p.printf("\n")
	}
	placed := 0
	for _, c := range r.NodeClaims {
		placed += len(c.Pods)
	}
	p.printf("Total: $%.4f/hour for %s holding %s", r.PricePerHour, count(len(r.NodeClaims), "NodeClaim"), count(placed, "pod"))
	if r.LowerBoundPerHour > 0 {
		p.printf("; lower bound $%.4f/hour; price/bound %.3f", r.LowerBoundPerHour, r.PriceToBound)
	}
	p.printf("\n")
	return p.err
}

// printer remembers the first write error, so that WriteText checks once.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

func or0(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
