package awsemu

import (
	"net/http"
)

// serveSTS answers GetCallerIdentity with the test user.
func (e *Emulator) serveSTS(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeError(w, serviceSTS, newError(http.StatusBadRequest, "MalformedQueryString", "%v", err))
		return
	}
	action := r.Form.Get("Action")
	if action != "GetCallerIdentity" {
		writeError(w, serviceSTS, newError(http.StatusBadRequest, "InvalidAction", "Could not find operation %s for version 2011-06-15", action))
		return
	}
	e.countCall(serviceSTS, action)
	writeQueryResult(w, serviceSTS, action, struct {
		Arn     string `xml:"Arn"`
		UserID  string `xml:"UserId"`
		Account string `xml:"Account"`
	}{CallerARN, CallerUserID, AccountID})
}
