# EC2 instance types in my zones whose GPUs have at least 80 GiB, cheapest
# Spot price first.
data "gpu_inventory" "big_gpus" {
  source  = "ec2"
  sort_by = "spot_price"

  filter {
    min_gpu_memory_gib = 80
    availability_zones = ["us-east-1a", "us-east-1b"]
    architectures      = ["x86_64"]
    spot_prices        = true
  }
}

output "cheapest_80gb_gpu_type" {
  description = "The instance type with the lowest Spot price in those zones."
  value       = data.gpu_inventory.big_gpus.instance_types[0].instance_type
}

output "price_per_gpu_hour" {
  description = "USD per GPU-hour at Spot prices, by instance type, cheapest first."
  value = [for t in data.gpu_inventory.big_gpus.instance_types :
    { instance_type = t.instance_type, usd = t.min_spot_price / t.gpu_count } if t.min_spot_price != null
  ]
}
