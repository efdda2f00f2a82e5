package eks

// This file says, without any secret, which AWS credentials a Client signs
// with and where they came from: the AWS_* environment variables, a profile
// of the shared config and credentials files (and what chose the profile),
// a web identity token, the container credentials endpoint, or the EC2
// instance metadata service (IMDS) as the last resort. A credentials
// failure (credentials_errors.go) is explained from it, so that its message
// names the setting to fix. A description may name a file, a profile, a
// role or the last four characters of an access key ID (as `aws configure
// list` shows it); it never holds a secret access key or a session token.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Environment variables of the SDK's credential chain, named in messages.
const (
	envAccessKeyID     = "AWS_ACCESS_KEY_ID"
	envSecretAccessKey = "AWS_SECRET_ACCESS_KEY"
	envSessionToken    = "AWS_SESSION_TOKEN"
	envProfile         = "AWS_PROFILE"
	envDefaultProfile  = "AWS_DEFAULT_PROFILE"
	envCredentialsFile = "AWS_SHARED_CREDENTIALS_FILE"
	envConfigFile      = "AWS_CONFIG_FILE"
	envWebIdentityFile = "AWS_WEB_IDENTITY_TOKEN_FILE"
	envRoleARN         = "AWS_ROLE_ARN"
	envIMDSDisabled    = "AWS_EC2_METADATA_DISABLED"
)

// credentialsOrigin is where a Client's credentials come from.
type credentialsOrigin struct {
	// sources is the SDK's chain as it resolved it (aws.CredentialSource).
	sources []aws.CredentialSource
	// profile is the shared config profile the chain reads, and chosenBy
	// what chose it: Settings.ProfileSetting, AWS_PROFILE or "the default
	// profile".
	profile, chosenBy string
	// profileSetting names the setting that chooses a profile in messages.
	profileSetting string
	// credentialsFile and configFile are the shared files the chain reads.
	credentialsFile, configFile string
	// retrieve returns the credentials without a network call for static
	// ones (the SDK caches them), to read the access key ID and the file.
	retrieve func(context.Context) (aws.Credentials, error)
	getenv   func(string) string
}

// newCredentialsOrigin describes the chain the SDK resolved for s into creds.
func newCredentialsOrigin(s Settings, creds aws.CredentialsProvider, getenv func(string) string) credentialsOrigin {
	o := credentialsOrigin{
		profileSetting:  s.ProfileSetting,
		credentialsFile: orDefault(getenv(envCredentialsFile), config.DefaultSharedCredentialsFilename()),
		configFile:      orDefault(getenv(envConfigFile), config.DefaultSharedConfigFilename()),
		getenv:          getenv,
	}
	if o.profileSetting == "" {
		o.profileSetting = "the profile setting"
	}
	switch {
	case s.Profile != "":
		o.profile, o.chosenBy = s.Profile, o.profileSetting
	case getenv(envProfile) != "":
		o.profile, o.chosenBy = getenv(envProfile), envProfile
	case getenv(envDefaultProfile) != "":
		o.profile, o.chosenBy = getenv(envDefaultProfile), envDefaultProfile
	default:
		o.profile, o.chosenBy = "default", "the default profile"
	}
	if p, ok := creds.(interface{ ProviderSources() []aws.CredentialSource }); ok {
		o.sources = p.ProviderSources()
	}
	if creds != nil {
		o.retrieve = creds.Retrieve
	}
	return o
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (o credentialsOrigin) has(s aws.CredentialSource) bool { return slices.Contains(o.sources, s) }

// static says whether the credentials are an access key pair read from
// the environment or a shared file: retrieving them calls nothing.
func (o credentialsOrigin) static() bool {
	return len(o.sources) == 1 && (o.sources[0] == aws.CredentialSourceEnvVars || o.sources[0] == aws.CredentialSourceProfile)
}

// profilePhrase is `profile "ci" (AWS_PROFILE)`.
func (o credentialsOrigin) profilePhrase() string {
	return fmt.Sprintf("profile %q (%s)", o.profile, o.chosenBy)
}

// sharedFiles names the shared files the chain reads.
func (o credentialsOrigin) sharedFiles() string {
	return o.credentialsFile + " or " + o.configFile
}

// describe says which credentials are in use and where they came from
// (use), and names what to change (fix), with another way out (alternative)
// where there is one. ctx bounds the retrieval of static credentials,
// which calls nothing.
func (o credentialsOrigin) describe(ctx context.Context) (use, fix, alternative string) {
	otherProfile := "or choose another profile with " + o.profileSetting + " or " + envProfile
	switch {
	case o.has(aws.CredentialSourceEnvVars):
		use = o.keyID(ctx) + " and secret access key from " + envAccessKeyID + " and " + envSecretAccessKey + " (the environment)"
		if o.getenv(envSessionToken) != "" {
			use += ", with the session token of " + envSessionToken
		}
		fix = envAccessKeyID + " and " + envSecretAccessKey
		if o.getenv(envSessionToken) != "" {
			fix += " (and " + envSessionToken + ")"
		}
		alternative = "or unset them to use a profile of " + o.sharedFiles()
		if o.chosenBy == envProfile || o.chosenBy == envDefaultProfile {
			alternative = fmt.Sprintf("they take precedence over %s %q: unset them to use that profile", o.chosenBy, o.profile)
		}
	case o.has(aws.CredentialSourceEnvVarsSTSWebIDToken):
		use = fmt.Sprintf("web identity token file %s (%s) for role %q (%s), from the environment",
			o.getenv(envWebIdentityFile), envWebIdentityFile, o.getenv(envRoleARN), envRoleARN)
		fix = envWebIdentityFile + " and " + envRoleARN + ", or the role's trust policy"
	case o.has(aws.CredentialSourceProfile) && len(o.sources) == 1:
		file := o.sharedFiles()
		if c, err := o.retrieveStatic(ctx); err == nil {
			if f, ok := strings.CutPrefix(c.Source, "SharedConfigCredentials: "); ok && f != "" {
				file = f
			}
		}
		use = o.keyID(ctx) + " and secret access key of " + o.profilePhrase() + " in " + file
		fix = fmt.Sprintf("aws_access_key_id and aws_secret_access_key of profile %q in %s", o.profile, file)
		alternative = otherProfile
	case o.has(aws.CredentialSourceHTTP):
		use = "the container credentials endpoint (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or AWS_CONTAINER_CREDENTIALS_FULL_URI, from the environment)"
		fix = "the task's or pod's IAM role"
	case o.has(aws.CredentialSourceIMDS):
		use = "the EC2 instance's IAM role from the instance metadata service (IMDS), the last resort of the chain: " +
			envAccessKeyID + " and " + envSecretAccessKey + " are not set, and " + o.profilePhrase() + " in " + o.sharedFiles() + " has no credentials"
		if strings.EqualFold(o.getenv(envIMDSDisabled), "true") {
			use += "; and IMDS is off (" + envIMDSDisabled + ")"
		}
		fix = "the credentials: set " + envAccessKeyID + " and " + envSecretAccessKey + ", or choose a profile that has credentials with " +
			o.profileSetting + " or " + envProfile + fmt.Sprintf(" (or give profile %q credentials in %s)", o.profile, o.credentialsFile) +
			", or run on an EC2 instance with an IAM role"
	default:
		use = o.profileKind() + " of " + o.profilePhrase() + " in " + o.sharedFiles()
		fix = fmt.Sprintf("profile %q in %s", o.profile, o.sharedFiles())
		if o.has(aws.CredentialSourceSSO) || o.has(aws.CredentialSourceSSOLegacy) {
			fix += fmt.Sprintf(" (an expired SSO session is renewed with `aws sso login --profile %s`)", o.profile)
		}
		alternative = otherProfile
	}
	return use, fix, alternative
}

// profileKind names how a profile that holds no access key gets its
// credentials.
func (o credentialsOrigin) profileKind() string {
	switch {
	case o.has(aws.CredentialSourceSSO), o.has(aws.CredentialSourceSSOLegacy):
		return "the IAM Identity Center (SSO) login"
	case o.has(aws.CredentialSourceProcess):
		return "the credential_process"
	case o.has(aws.CredentialSourceLogin):
		return "the `aws login` session"
	case o.has(aws.CredentialSourceProfileSTSWebIDToken):
		return "the web_identity_token_file and role_arn"
	case o.has(aws.CredentialSourceProfileSourceProfile), o.has(aws.CredentialSourceProfileNamedProvider):
		return "the role_arn (assumed with source_profile or credential_source)"
	}
	return "the credentials"
}

// keyID is "access key ID ****WXYZ" when the credentials are static and
// retrievable, "access key ID" otherwise.
func (o credentialsOrigin) keyID(ctx context.Context) string {
	c, err := o.retrieveStatic(ctx)
	if err != nil || c.AccessKeyID == "" {
		return "access key ID"
	}
	return "access key ID " + maskedKeyID(c.AccessKeyID)
}

func (o credentialsOrigin) retrieveStatic(ctx context.Context) (aws.Credentials, error) {
	if !o.static() || o.retrieve == nil {
		return aws.Credentials{}, fmt.Errorf("not static credentials")
	}
	return o.retrieve(ctx)
}

// maskedKeyID shows an access key ID's last four characters only, as
// `aws configure list` does.
func maskedKeyID(id string) string {
	if len(id) <= 4 {
		return strings.Repeat("*", len(id))
	}
	return strings.Repeat("*", len(id)-4) + id[len(id)-4:]
}

// osGetenv is os.Getenv, which the SDK's chain reads.
func osGetenv(key string) string { return os.Getenv(key) }
