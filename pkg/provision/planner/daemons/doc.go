// Package daemons models the DaemonSet pods a plan's nodes will run: the pod each DaemonSet would
// create on a new node (PodsForNewNodes), which of them a candidate's node would run (Set.On), and
// the room they will take on nodes in flight that do not run them yet (Set.ReserveInFlight). It
// knows nothing of a plan's claims: the planner asks it about candidates and nodes of the
// snapshot, and the answers depend only on the scheduler profile's Filter plugins.
package daemons
