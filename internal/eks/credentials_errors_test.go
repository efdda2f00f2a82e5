package eks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

const wrongSecret = "wrongSecretNeverPrinted0000000000000000"

// rejectingAWS is an endpoint that refuses every request's credentials as
// EC2 (AuthFailure, 401, EC2 query XML) and EKS (UnrecognizedClientException,
// 403, REST-JSON) do; it counts the requests.
func rejectingAWS(t *testing.T) (Endpoints, *atomic.Int64) {
	var requests atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if strings.Contains(r.Header.Get("Content-Type"), "x-www-form-urlencoded") {
			w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?>
<Response><Errors><Error><Code>AuthFailure</Code><Message>AWS was not able to validate the provided access credentials</Message></Error></Errors><RequestID>0f3c</RequestID></Response>`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amzn-Errortype", "UnrecognizedClientException")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"message":"The security token included in the request is invalid."}`))
	}))
	t.Cleanup(server.Close)
	return Endpoints{EKS: server.URL, EC2: server.URL}, &requests
}

// credentialsEnv clears the AWS_* variables of the credential chain and
// points the shared files at files of the test, then sets vars.
func credentialsEnv(t *testing.T, vars map[string]string) {
	dir := t.TempDir()
	for _, k := range []string{envAccessKeyID, envSecretAccessKey, envSessionToken, "AWS_ACCESS_KEY", "AWS_SECRET_KEY",
		envProfile, envDefaultProfile, envWebIdentityFile, envRoleARN, "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"} {
		t.Setenv(k, "")
	}
	t.Setenv(envCredentialsFile, filepath.Join(dir, "credentials"))
	t.Setenv(envConfigFile, filepath.Join(dir, "config"))
	t.Setenv(envIMDSDisabled, "true")
	for k, v := range vars {
		t.Setenv(k, v)
	}
}

func TestRejectedCredentialsNameTheirOriginAndNeverTheSecret(t *testing.T) {
	endpoints, _ := rejectingAWS(t)
	dir := t.TempDir()
	credentialsFile := filepath.Join(dir, "credentials")
	require.NoError(t, os.WriteFile(credentialsFile, []byte("[ci]\naws_access_key_id = AKIAPROFILEKEY0002\naws_secret_access_key = "+wrongSecret+"\n"), 0o600))

	tests := []struct {
		description string
		env         map[string]string
		settings    Settings
		want        []string
	}{
		{
			"Keys from the environment name the variables, the key ID's last four characters, and the way to a profile.",
			map[string]string{envAccessKeyID: "AKIAENVIRONKEY0001", envSecretAccessKey: wrongSecret},
			Settings{},
			[]string{"in use: access key ID **************0001 and secret access key from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (the environment).",
				"Fix AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY; or unset them to use a profile of "},
		},
		{
			"Keys from the environment say they override AWS_PROFILE.",
			map[string]string{envCredentialsFile: credentialsFile, envAccessKeyID: "AKIAENVIRONKEY0001", envSecretAccessKey: wrongSecret, envProfile: "ci"},
			Settings{},
			[]string{`they take precedence over AWS_PROFILE "ci": unset them to use that profile`},
		},
		{
			"A profile's keys name the profile, what chose it and its file.",
			map[string]string{envCredentialsFile: credentialsFile, envAccessKeyID: "AKIAENVIRONKEY0001", envSecretAccessKey: wrongSecret},
			Settings{Profile: "ci", ProfileSetting: "aws.profile"},
			[]string{`in use: access key ID **************0002 and secret access key of profile "ci" (aws.profile) in ` + credentialsFile + ".",
				`Fix aws_access_key_id and aws_secret_access_key of profile "ci" in ` + credentialsFile + "; or choose another profile with aws.profile or AWS_PROFILE."},
		},
		{
			"A profile chosen by AWS_PROFILE says so.",
			map[string]string{envCredentialsFile: credentialsFile, envProfile: "ci"},
			Settings{},
			[]string{`of profile "ci" (AWS_PROFILE) in ` + credentialsFile},
		},
	}
	for _, tc := range tests {
		t.Run(tc.description, func(t *testing.T) {
			credentialsEnv(t, tc.env)
			s := tc.settings
			s.Region, s.Endpoints = "us-west-2", endpoints
			c, err := s.Connect(context.Background())
			require.NoError(t, err)

			_, err = c.InstanceTypes(context.Background(), []string{"p5.48xlarge"})
			var rejected *CredentialsError
			require.ErrorAs(t, err, &rejected)
			require.ErrorContains(t, err, "AWS rejected the credentials (EC2 DescribeInstanceTypes: AuthFailure): the access key ID is unknown, or the secret access key does not match it; ")
			require.Equal(t, "AuthFailure", apiErrorCode(err), "AWS's error code still reads through")
			for _, want := range tc.want {
				require.ErrorContains(t, err, want)
			}
			require.NotContains(t, err.Error(), wrongSecret)

			_, _, err = c.ReadNodeGroup(context.Background(), "prod", "gpu")
			require.ErrorAs(t, err, &rejected)
			require.ErrorContains(t, err, "AWS rejected the credentials (EKS DescribeNodegroup: UnrecognizedClientException): AWS does not know the access key ID; ")
			require.NotContains(t, err.Error(), wrongSecret)
		})
	}
}

func TestMissingCredentialsNameEveryPlaceLookedIn(t *testing.T) {
	endpoints, requests := rejectingAWS(t)
	credentialsEnv(t, nil)
	c, err := Settings{Region: "us-west-2", Endpoints: endpoints, ProfileSetting: "aws.profile"}.Connect(context.Background())
	require.NoError(t, err)

	_, err = c.InstanceTypes(context.Background(), []string{"p5.48xlarge"})
	var missing *CredentialsError
	require.ErrorAs(t, err, &missing)
	require.ErrorContains(t, err, "no AWS credentials were found for EC2 DescribeInstanceTypes; in use: the EC2 instance's IAM role from the instance metadata service (IMDS), "+
		`the last resort of the chain: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set, and profile "default" (the default profile) in `+
		os.Getenv(envCredentialsFile)+" or "+os.Getenv(envConfigFile)+" has no credentials; and IMDS is off (AWS_EC2_METADATA_DISABLED).")
	require.ErrorContains(t, err, "Fix the credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or choose a profile that has credentials with aws.profile or AWS_PROFILE")
	require.ErrorContains(t, err, "no EC2 IMDS role found", "the SDK's own error is kept")
	require.Zero(t, requests.Load(), "nothing is sent without credentials")
}

func TestAMissingProfileNamesTheFilesLookedIn(t *testing.T) {
	credentialsEnv(t, nil)
	_, err := Settings{Region: "us-west-2", Profile: "gone", ProfileSetting: "aws.profile"}.Connect(context.Background())
	require.ErrorContains(t, err, `profile "gone" (aws.profile) is in neither `+os.Getenv(envCredentialsFile)+" nor "+os.Getenv(envConfigFile))
	require.ErrorContains(t, err, "or choose another profile with aws.profile or AWS_PROFILE")
}

func TestMaskedKeyIDShowsTheLastFourOnly(t *testing.T) {
	require.Equal(t, "****************MPLE", maskedKeyID("AKIAIOSFODNN7EXAMPLE"))
	require.Equal(t, "***", maskedKeyID("abc"))
}
