// Package explain says why a pod fits none of a NodePool's offerings, in the words of the Filter
// plugins that refused it, with what a user needs to act: the taint, the requirement key that
// conflicts, the largest instance type, or the device requests nothing could allocate.
package explain
