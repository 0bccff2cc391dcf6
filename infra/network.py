"""Network (profile aws only): a VPC for the DAX status cache, and the endpoints the functions then need.

DAX answers only inside a VPC, so both functions join it. The subnets are isolated
(no NAT): DynamoDB is reached through a gateway endpoint (free), SQS and Scheduler
through interface endpoints. docs/architecture.md "The production stack" has the cost
comparison with a NAT gateway.
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_logs as logs
from constructs import Construct

MAX_AZS = 2  # an environment-agnostic stack sees two AZs; pin the stack's env for three
SUBNET_TYPE = ec2.SubnetType.PRIVATE_ISOLATED
# Interface endpoints for the AWS APIs the functions call besides DynamoDB (a gateway endpoint).
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
            nat_gateways=0,
            subnet_configuration=[ec2.SubnetConfiguration(name="private", subnet_type=SUBNET_TYPE, cidr_mask=22)],
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
        self.subnet_type = SUBNET_TYPE
        self.subnets = ec2.SubnetSelection(subnet_type=SUBNET_TYPE)
        self.functions_security_group = ec2.SecurityGroup(
            self,
            "Functions",
            vpc=self.vpc,
            description="corral functions: out to the DAX cluster and the VPC endpoints",
            allow_all_outbound=True,
        )
        for name, service in INTERFACE_ENDPOINTS.items():
            endpoint = self.vpc.add_interface_endpoint(
                name, service=service, subnets=self.subnets, private_dns_enabled=True, open=False
            )
            # HTTPS from the functions only, rather than from the whole VPC CIDR.
            endpoint.connections.allow_default_port_from(self.functions_security_group)
