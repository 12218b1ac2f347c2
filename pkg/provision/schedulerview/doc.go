// Package schedulerview weighs nominations as kube-scheduler will weigh them: a View is the
// cluster with every launching NodeClaim stood in by the node it will become and the pods
// nominated there, and its Admits asks the scheduler's own Filter plugins, through a
// simulation.Simulator, whether a pod may bind to a node beside those nominations.
//
// The provisioner asks it before writing nominations (Admissible), when a pod was refused on the
// node planned for it, and when one is stranded there. It is its own package because it holds no
// provisioner state: it is built from the informers' lists and the scheduler's assumed pods, and
// it is used once and dropped. Its caller serializes the use of the Simulator.
package schedulerview
