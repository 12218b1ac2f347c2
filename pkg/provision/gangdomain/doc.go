// Package gangdomain plans a gang that asks for one topology domain (its PodGroup's
// spec.schedulingConstraints.topology) in one domain: kube-scheduler's TopologyPlacementGenerator
// tries such a gang in one domain of the key at a time, so capacity spread over two domains is
// capacity it never binds the gang to. The choice is made by planning the gang in each domain
// with the provisioner's planner.Planner, and the gang's pods are then pinned there with a
// required node affinity term, so that every claim the plan makes for them is in that domain.
//
// The package reads no informer and writes nothing: the provisioner hands it the input of a
// plan, how pods map to gangs, and each gang's topology key.
package gangdomain
