// Package packing orders a plan's pending pods for first-fit packing (Order): biggest first and
// balanced between cpu and memory, pods that may exclude each other in Karpenter's order, the
// pods already headed somewhere (DestinedFirst) and the ones asked first (FirstOf) ahead.
package packing
