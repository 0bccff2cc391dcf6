"""Network (profile aws only): a VPC for the DAX status cache, with a way out for the functions.

DAX answers only inside a VPC, so both functions join it. Three subnet tiers per AZ:
- public: a NAT gateway per AZ (and the internet gateway it uses);
- functions (private, with egress): the Lambdas' ENIs and the interface endpoints. The NAT is
  their way to the internet (customers' HTTPS endpoints for HTTP jobs) and to the AWS APIs
  without an endpoint here (lambda:Invoke for Lambda targets, CloudWatch GetMetricData for the
  operator view);
- private (isolated, no route out): the DAX nodes, which only the functions' security group reaches.
DynamoDB stays on a gateway endpoint (free), SQS and Scheduler on interface endpoints, so the
per-job traffic never pays NAT data processing. docs/decisions/production-stack.md has
the cost comparison (NAT per AZ vs one NAT vs endpoints).
"""

from __future__ import annotations

from typing import cast

from aws_cdk import CfnOutput, Fn, RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

MAX_AZS = 2  # an environment-agnostic stack sees two AZs; pin the stack's env for three
# One NAT per AZ: a single one would make every HTTP/Lambda-target job, in both AZs, depend on one AZ.
NAT_GATEWAYS = MAX_AZS
SUBNET_TYPE = ec2.SubnetType.PRIVATE_WITH_EGRESS  # where the functions run
# Isolated: DAX needs no route out (it reaches DynamoDB on its own side). Named, sized and listed first
# as the stack's only subnets were before the NAT, so a deployed stack keeps these subnets (same
# logical ids and CIDRs) and its DAX nodes stay where they are.
CACHE_SUBNET_GROUP = "private"
# Interface endpoints for the AWS APIs the functions call on every job besides DynamoDB (a gateway
# endpoint): they keep that traffic off the NAT's per-GB charge.
INTERFACE_ENDPOINTS = {
    "Sqs": ec2.InterfaceVpcEndpointAwsService.SQS,
    "Scheduler": ec2.InterfaceVpcEndpointAwsService("scheduler"),  # the API creates schedules
}


class Network(Construct):
    def __init__(self, scope: Construct, id: str) -> None:
        super().__init__(scope, id)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=MAX_AZS,
            nat_gateways=NAT_GATEWAYS,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name=CACHE_SUBNET_GROUP, subnet_type=ec2.SubnetType.PRIVATE_ISOLATED, cidr_mask=22
                ),
                ec2.SubnetConfiguration(name="functions", subnet_type=SUBNET_TYPE, cidr_mask=22),
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=26),
            ],
            gateway_endpoints={
                "DynamoDb": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.DYNAMODB)
            },
        )
        flow_logs = logs.LogGroup(
            self, "FlowLogs", retention=logs.RetentionDays.ONE_MONTH, removal_policy=RemovalPolicy.DESTROY
        )
        # Rejected traffic only: it is what explains a function that cannot reach its cache or queue,
        # at a fraction of the log volume of ALL.
        self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs),
            traffic_type=ec2.FlowLogTrafficType.REJECT,
        )
        # Every HTTP job leaves from one of these addresses: what a customer's firewall allowlists.
        nat_addresses = [cast(ec2.CfnEIP, subnet.node.find_child("EIP")) for subnet in self.vpc.public_subnets]
        CfnOutput(
            scope,
            "EgressIps",
            value=Fn.join(",", [address.ref for address in nat_addresses]),
            description="Public IPs the functions' outbound requests (HTTP jobs) come from",
        )
        self.subnets = ec2.SubnetSelection(subnet_type=SUBNET_TYPE)
        self.cache_subnet_group = CACHE_SUBNET_GROUP
        self.functions_security_group = ec2.SecurityGroup(
            self,
            "Functions",
            vpc=self.vpc,
            description="corral functions: out to DAX, the VPC endpoints and, through the NAT, the internet",
            allow_all_outbound=True,
        )
        self.interface_endpoints: list[ec2.InterfaceVpcEndpoint] = []
        for name, service in INTERFACE_ENDPOINTS.items():
            endpoint = self.vpc.add_interface_endpoint(
                name, service=service, subnets=self.subnets, private_dns_enabled=True, open=False
            )
            # HTTPS from the functions only, rather than from the whole VPC CIDR.
            endpoint.connections.allow_default_port_from(self.functions_security_group)
            self.interface_endpoints.append(endpoint)

    def customer_code_security_group(self, scope: Construct) -> ec2.SecurityGroup:
        """The jobs function's group: out to anywhere (through the NAT, so a customer's job leaves from the
        stack's `EgressIps` as it did from the worker), and in to nothing of corral's but the interface
        endpoints (with private DNS on, an AWS call the customer's code makes to SQS or Scheduler resolves
        to them; what it may do there is its role's, which holds nothing). Not admitted to DAX."""
        group = ec2.SecurityGroup(
            scope,
            "SecurityGroup",
            vpc=self.vpc,
            description="corral jobs function (customer code): out through the NAT; no way in to DAX",
            allow_all_outbound=True,
        )
        for endpoint in self.interface_endpoints:
            endpoint.connections.allow_default_port_from(group)
        return group
