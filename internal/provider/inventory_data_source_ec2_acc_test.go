package provider

import (
	"strconv"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/stretchr/testify/require"
)

func TestAccInventoryDataSource_ec2BigGPUsCheapestFirst(t *testing.T) {
	testAccPreCheck(t)
	const address = "data.gpu_inventory.big"
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProtoV6ProviderFactories,
		Steps: []resource.TestStep{
			{
				Config: providerConfig() + `
data "gpu_inventory" "big" {
  source  = "ec2"
  sort_by = "spot_price"
  filter {
    min_gpu_memory_gib = 80
    architectures      = ["x86_64"]
    availability_zones = ["us-west-2a", "us-west-2b"]
    spot_prices        = true
  }
}
`,
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(address, tfjsonpath.New("nodes"), knownvalue.Null()),
				},
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[address].Primary.Attributes
					n, err := strconv.Atoi(attrs["instance_types.#"])
					require.NoError(t, err)
					require.Positive(t, n, "p4de, p5, p5e and p5en have 80 GiB GPUs or more")
					names := map[string]bool{}
					last, priced := 0.0, 0
					for i := range n {
						at := func(k string) string { return attrs["instance_types."+strconv.Itoa(i)+"."+k] }
						names[at("instance_type")] = true
						mib, err := strconv.Atoi(at("gpu_memory_mib"))
						require.NoError(t, err)
						require.GreaterOrEqual(t, mib, 80*1024, at("instance_type"))
						require.Equal(t, "x86_64", at("architectures.0"))
						for j := 0; at("availability_zones."+strconv.Itoa(j)) != ""; j++ {
							require.Contains(t, []string{"us-west-2a", "us-west-2b"}, at("availability_zones."+strconv.Itoa(j)))
						}
						if at("min_spot_price") == "" {
							continue // no price: listed last
						}
						price, err := strconv.ParseFloat(at("min_spot_price"), 64)
						require.NoError(t, err)
						require.GreaterOrEqual(t, price, last, "cheapest first: %s", at("instance_type"))
						last = price
						priced++
					}
					require.Positive(t, priced, "the emulator answers DescribeSpotPriceHistory")
					require.True(t, names["p5.48xlarge"])
					require.False(t, names["g5.xlarge"], "an A10G has 24 GiB")
					return nil
				},
			},
		},
	})
}
