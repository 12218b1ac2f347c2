package manifests

import _ "embed"

// IAMPolicy is the IAM policy Tailor's role needs, aws/iam-policy.json, with its ${...} placeholders
// unfilled; `tailor doctor` compares the actions a role's policies allow with its actions.
//
//go:embed aws/iam-policy.json
var IAMPolicy []byte
