// Package clusterview turns what the cluster holds (Cluster: nodes, pods, NodeClaims) into what a
// plan sees of it (View): nodes still launching shown as they will register, stand-ins for
// NodeClaims without a Node, the pods counted where they are headed, and the label keys a claim
// has not settled yet. It also says which of the pods counted where they are headed the scheduler
// would no longer place there (Ungrounded), and what each NodePool's claims hold (PoolUsage).
package clusterview
