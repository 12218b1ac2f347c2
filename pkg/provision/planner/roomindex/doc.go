// Package roomindex holds the indexes of a plan's open claims, so that a pod is not asked of
// every claim. Every pod a plan places used to scan all open claims in each pass: their room for
// the first pass, the growth of every claim without room (then a sort) for the second. At 20,000
// pods of Karpenter's mix on 4,000 claims that was 80 million claim visits and 5 million growths,
// a third of the plan, and the reason a plan's rate fell with the fleet. Both orders are the same
// as the scan's; the indexes only skip the claims the scan would have passed over.
//
//   - Tree finds, in opening order, the claims whose room holds a pod's cpu and memory, without
//     visiting those whose room does not.
//   - Orders keeps, for one size of pod, the claims without room for it in growth order: from pod
//     to pod only the claims that changed move. A plan alternates between a few sizes
//     (packing.Order takes pods heavy in cpu and in memory in turn), so a few orders are kept.
//   - Bits is a set of claims by opening order with its count, for the claims that hold a kind
//     of pod that repels its own.
//
// Claims are known by their index in opening order; the planner keeps the claims themselves,
// works out their rooms and growths, and logs the claims that opened or changed. This package
// knows nothing of what a claim is.
package roomindex
