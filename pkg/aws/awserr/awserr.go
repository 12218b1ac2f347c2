// Package awserr reads AWS error codes. It is its own package so that both the provider and the
// node class resolver (pkg/aws/resolve, which must not import the provider) share one reading.
package awserr

import (
	"errors"

	"github.com/aws/smithy-go"
)

// Code is the AWS error code of err (an API error, or an error in a CreateFleet response, which
// the provider wraps in a type with the same method), or "".
func Code(err error) string {
	var ae interface{ ErrorCode() string }
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

var _ interface{ ErrorCode() string } = smithy.APIError(nil)
