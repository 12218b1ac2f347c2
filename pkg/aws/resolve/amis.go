package resolve

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	corev1 "k8s.io/api/core/v1"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/aws/awserr"
)

// candidateImage is an image some term selected, with the instance requirements it serves.
type candidateImage struct {
	image        ec2types.Image
	requirements []corev1.NodeSelectorRequirement
}

// amis resolves the AMI selector terms. reason is "" when images were found, else
// "Reason: message" for the AMIsReady condition.
func (r *Resolver) amis(ctx context.Context, nc *awsv1.EC2NodeClass) ([]awsv1.AMI, string, error) {
	var candidates []candidateImage
	if i, term, ok := aliasTerm(nc); ok {
		field := fmt.Sprintf("spec.amiSelectorTerms[%d].alias", i)
		family, version, err := parseAlias(term)
		if err != nil {
			return nil, fmt.Sprintf("AMIFamilyUnsupported: %s: %v", field, err), nil
		}
		params, err := aliasParameters(family, version, r.kubernetesVersion)
		if err != nil {
			return nil, fmt.Sprintf("AMIFamilyUnsupported: %s: %v", field, err), nil
		}
		for _, p := range params {
			id, err := r.parameter(ctx, p.name)
			if err != nil {
				return nil, "", err
			}
			if id == "" {
				continue
			}
			images, err := r.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: []string{id}})
			if err != nil {
				return nil, "", err
			}
			for _, img := range images {
				candidates = append(candidates, candidateImage{image: img, requirements: p.requirements})
			}
		}
		if len(candidates) == 0 {
			return nil, fmt.Sprintf("AMINotFound: %s: %s not found for Kubernetes %s (no image behind SSM parameter %s or its other variants)",
				field, term, r.kubernetesVersion, params[0].name), nil
		}
	} else {
		for _, term := range nc.Spec.AMISelectorTerms {
			images, err := r.termImages(ctx, term)
			if err != nil {
				return nil, "", err
			}
			for _, img := range images {
				candidates = append(candidates, candidateImage{image: img, requirements: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{imageArch(img.Architecture)}}}})
			}
		}
	}
	amis := newestPerRequirements(candidates)
	if len(amis) == 0 {
		return nil, "AMINotFound: amiSelectorTerms match no image", nil
	}
	return amis, "", nil
}

// aliasTerm finds the alias term; validation makes it the only term when there is one.
func aliasTerm(nc *awsv1.EC2NodeClass) (int, string, bool) {
	for i, term := range nc.Spec.AMISelectorTerms {
		if term.Alias != "" {
			return i, term.Alias, true
		}
	}
	return 0, "", false
}

// parseAlias reads family@version (version "latest" when left out) into an AMI family.
func parseAlias(alias string) (family, version string, err error) {
	name, version, _ := strings.Cut(alias, "@")
	if version == "" {
		version = "latest"
	}
	for _, f := range []string{awsv1.AMIFamilyAL2, awsv1.AMIFamilyAL2023, awsv1.AMIFamilyBottlerocket,
		awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025} {
		if strings.EqualFold(f, name) {
			if awsv1.WindowsBuild(f) != "" && version != "latest" {
				return "", "", fmt.Errorf("%s: Windows images are published as latest only; use %s@latest", alias, strings.ToLower(f))
			}
			return f, version, nil
		}
	}
	return "", "", fmt.Errorf("%s: unknown alias family %q; use al2023, bottlerocket, al2, windows2019, windows2022 or windows2025", alias, name)
}

type aliasParameter struct {
	name         string
	requirements []corev1.NodeSelectorRequirement
}

// aliasParameters names the public SSM parameters behind an alias, one per image variant.
func aliasParameters(family, version, k8s string) ([]aliasParameter, error) {
	req := func(arch string, gpu bool) []corev1.NodeSelectorRequirement {
		op := corev1.NodeSelectorOpDoesNotExist
		if gpu {
			op = corev1.NodeSelectorOpExists
		}
		return []corev1.NodeSelectorRequirement{{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{arch}},
			{Key: awsv1.LabelInstanceGPUCount, Operator: op}}
	}
	eks := "/aws/service/eks/optimized-ami/" + k8s
	var out []aliasParameter
	switch family {
	case awsv1.AMIFamilyAL2023:
		for _, v := range []struct {
			arch, ec2Arch, variant string
			gpu                    bool
		}{{karpv1.ArchitectureAmd64, "x86_64", "standard", false}, {karpv1.ArchitectureArm64, "arm64", "standard", false},
			{karpv1.ArchitectureAmd64, "x86_64", "nvidia", true}, {karpv1.ArchitectureArm64, "arm64", "nvidia", true}} {
			leaf := "recommended"
			if version != "latest" {
				leaf = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-%s", v.ec2Arch, v.variant, k8s, version)
			}
			out = append(out, aliasParameter{fmt.Sprintf("%s/amazon-linux-2023/%s/%s/%s/image_id", eks, v.ec2Arch, v.variant, leaf), req(v.arch, v.gpu)})
		}
	case awsv1.AMIFamilyBottlerocket:
		leaf := strings.TrimPrefix(version, "v")
		for _, v := range []struct {
			arch, ec2Arch, variant string
			gpu                    bool
		}{{karpv1.ArchitectureAmd64, "x86_64", "", false}, {karpv1.ArchitectureArm64, "arm64", "", false},
			{karpv1.ArchitectureAmd64, "x86_64", "-nvidia", true}, {karpv1.ArchitectureArm64, "arm64", "-nvidia", true}} {
			out = append(out, aliasParameter{fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/%s/image_id", k8s, v.variant, v.ec2Arch, leaf), req(v.arch, v.gpu)})
		}
	case awsv1.AMIFamilyAL2:
		for _, v := range []struct{ arch, suffix, nodePrefix string }{{karpv1.ArchitectureAmd64, "", ""}, {karpv1.ArchitectureArm64, "-arm64", "-arm64"}, {karpv1.ArchitectureAmd64, "-gpu", "-gpu"}} {
			leaf := "recommended"
			if version != "latest" {
				leaf = fmt.Sprintf("amazon-eks%s-node-%s-%s", v.nodePrefix, k8s, version)
			}
			out = append(out, aliasParameter{fmt.Sprintf("%s/amazon-linux-2%s/%s/image_id", eks, v.suffix, leaf), req(v.arch, v.suffix == "-gpu")})
		}
	case awsv1.AMIFamilyWindows2019, awsv1.AMIFamilyWindows2022, awsv1.AMIFamilyWindows2025:
		// One image per Windows Server release (Server Core, x86-64 only), built for the
		// cluster's Kubernetes version; its nodes carry the release's build label.
		year := strings.TrimPrefix(family, "Windows")
		out = append(out, aliasParameter{
			name: fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", year, k8s),
			requirements: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.ArchitectureAmd64}},
				{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpIn, Values: []string{string(corev1.Windows)}},
				{Key: corev1.LabelWindowsBuild, Operator: corev1.NodeSelectorOpIn, Values: []string{awsv1.WindowsBuild(family)}},
			}})
	default:
		return nil, fmt.Errorf("alias family %s has no user data format in Tailor; use al2023, bottlerocket, al2 or a windows family", family)
	}
	return out, nil
}

// parameter reads an SSM parameter; a missing one is "" (that variant is not published).
func (r *Resolver) parameter(ctx context.Context, name string) (string, error) {
	out, err := r.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	var missing *ssmtypes.ParameterNotFound
	if errors.As(err, &missing) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading SSM parameter %s: %w", name, err)
	}
	return aws.ToString(out.Parameter.Value), nil
}

// termImages lists the images one non-alias term selects. A name without an owner is looked up
// among the account's own and Amazon's images, so a public look-alike cannot be picked up.
func (r *Resolver) termImages(ctx context.Context, term awsv1.AMISelectorTerm) ([]ec2types.Image, error) {
	in := &ec2.DescribeImagesInput{Filters: tagFilters(term.Tags)}
	if term.SSMParameter != "" {
		id, err := r.parameter(ctx, term.SSMParameter)
		if err != nil || id == "" {
			return nil, err
		}
		term.ID = id
	}
	if term.ID != "" {
		in.ImageIds = []string{term.ID}
	}
	if term.Name != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{term.Name}})
		if term.Owner == "" {
			in.Owners = []string{"self", "amazon"}
		}
	}
	if term.Owner != "" {
		in.Owners = []string{term.Owner}
	}
	return r.describeImages(ctx, in)
}

func (r *Resolver) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]ec2types.Image, error) {
	var out []ec2types.Image
	if len(in.ImageIds) == 0 {
		in.MaxResults = aws.Int32(1000)
	}
	for p := ec2.NewDescribeImagesPaginator(r.ec2, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if code := awserr.Code(err); code == "InvalidAMIID.NotFound" || code == "InvalidAMIID.Malformed" {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("describing images: %w", err)
		}
		out = append(out, page.Images...)
	}
	return out, nil
}

func imageArch(a ec2types.ArchitectureValues) string {
	if a == ec2types.ArchitectureValuesArm64 {
		return karpv1.ArchitectureArm64
	}
	return karpv1.ArchitectureAmd64
}

// newestPerRequirements keeps, for each distinct requirement set, the newest image that is not
// deprecated (a deprecated one only when nothing else serves it), newest first overall.
func newestPerRequirements(candidates []candidateImage) []awsv1.AMI {
	created := func(c candidateImage) time.Time {
		t, _ := time.Parse(time.RFC3339, aws.ToString(c.image.CreationDate))
		return t
	}
	deprecated := func(c candidateImage) bool { return c.image.DeprecationTime != nil }
	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		if deprecated(a) != deprecated(b) {
			return !deprecated(a)
		}
		if !created(a).Equal(created(b)) {
			return created(a).After(created(b))
		}
		return aws.ToString(a.image.Name) > aws.ToString(b.image.Name)
	})
	seen := map[string]bool{}
	var out []awsv1.AMI
	for _, c := range candidates {
		key := fmt.Sprint(c.requirements)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, awsv1.AMI{ID: aws.ToString(c.image.ImageId), Name: aws.ToString(c.image.Name),
			Deprecated: deprecated(c), Requirements: c.requirements})
	}
	return out
}
