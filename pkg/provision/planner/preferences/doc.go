// Package preferences reads a pod's soft constraints (ScheduleAnyway spreads, preferred pod
// affinity and anti-affinity, preferred node affinity) and makes its ladder of shapes (Ladder):
// the pod with every preference required first, giving one up at each step, the pod itself last.
// The planner places a pod on new capacity in the strictest shape that fits.
package preferences
