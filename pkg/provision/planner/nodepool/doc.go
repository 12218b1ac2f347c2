// Package nodepool is a NodePool as one plan sees it (State): the offerings its requirements
// allow (Candidate: an instance type in a zone with a capacity type, with the labels its node
// would carry), cheapest first; their classes for a pod's label keys; the values a claim may
// choose for custom label keys (LabelChoice); how efficiently its types hold the batch (ratio);
// its limits and minValues; and the empty domains it may launch in. It knows nothing of the
// claims a plan opens beyond the capacity they count against limits.
package nodepool
