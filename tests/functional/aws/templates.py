"""The mixed template of issue 8 in both forms: a VPC with a subnet and a security group,
an instance with a volume attached, a bucket, a queue and a topic that feeds it."""

from __future__ import annotations

HOT = """\
heat_template_version: 2018-08-31
parameters:
  visibility: {type: number, default: 30}
  topic_name: {type: string, default: kiln-orders}
  instance_type: {type: string, default: t2.micro}
  zone: {type: string, default: us-east-1a}
resources:
  vpc:
    type: AWS::EC2::VPC
    properties:
      CidrBlock: 10.20.0.0/16
      EnableDnsSupport: true
      Tags: [{Key: team, Value: kiln}]
  subnet:
    type: AWS::EC2::Subnet
    properties:
      VpcId: {get_resource: vpc}
      CidrBlock: 10.20.1.0/24
      AvailabilityZone: {get_param: zone}
  web_sg:
    type: AWS::EC2::SecurityGroup
    properties:
      GroupDescription: web servers
      VpcId: {get_resource: vpc}
      SecurityGroupIngress:
        - {IpProtocol: tcp, FromPort: 443, ToPort: 443, CidrIp: 0.0.0.0/0}
  server:
    type: AWS::EC2::Instance
    properties:
      ImageId: ami-12c6146b
      InstanceType: {get_param: instance_type}
      SubnetId: {get_resource: subnet}
      SecurityGroupIds: [{get_resource: web_sg}]
      Tags: [{Key: role, Value: web}]
  data:
    type: AWS::EC2::Volume
    properties:
      AvailabilityZone: {get_attr: [server, AvailabilityZone]}
      Size: 8
  data_attachment:
    type: AWS::EC2::VolumeAttachment
    properties:
      InstanceId: {get_resource: server}
      VolumeId: {get_resource: data}
      Device: /dev/sdh
  assets:
    type: AWS::S3::Bucket
    properties:
      VersioningConfiguration: {Status: Enabled}
  orders:
    type: AWS::SQS::Queue
    properties:
      VisibilityTimeout: {get_param: visibility}
  notices:
    type: AWS::SNS::Topic
    properties:
      TopicName: {get_param: topic_name}
      Subscription:
        - {Protocol: sqs, Endpoint: {get_attr: [orders, Arn]}}
outputs:
  queue_url: {value: {get_attr: [orders, QueueUrl]}}
  topic_arn: {value: {get_resource: notices}}
  bucket: {value: {get_resource: assets}}
  bucket_domain: {value: {get_attr: [assets, DomainName]}}
  server_ip: {value: {get_attr: [server, PrivateIp]}}
  zone: {value: {get_attr: [subnet, AvailabilityZone]}}
"""

CFN = """\
AWSTemplateFormatVersion: '2010-09-09'
Parameters:
  Visibility: {Type: Number, Default: 30}
  TopicName: {Type: String, Default: kiln-orders}
  InstanceType: {Type: String, Default: t2.micro}
  Zone: {Type: String, Default: us-east-1a}
Resources:
  Vpc:
    Type: AWS::EC2::VPC
    Properties:
      CidrBlock: 10.30.0.0/16
      EnableDnsSupport: true
      Tags: [{Key: team, Value: kiln}]
  Subnet:
    Type: AWS::EC2::Subnet
    Properties:
      VpcId: {Ref: Vpc}
      CidrBlock: 10.30.1.0/24
      AvailabilityZone: {Ref: Zone}
  WebSg:
    Type: AWS::EC2::SecurityGroup
    Properties:
      GroupDescription: web servers
      VpcId: {Ref: Vpc}
      SecurityGroupIngress:
        - {IpProtocol: tcp, FromPort: 443, ToPort: 443, CidrIp: 0.0.0.0/0}
  Server:
    Type: AWS::EC2::Instance
    Properties:
      ImageId: ami-12c6146b
      InstanceType: {Ref: InstanceType}
      SubnetId: {Ref: Subnet}
      SecurityGroupIds: [{Ref: WebSg}]
      Tags: [{Key: role, Value: web}]
  Data:
    Type: AWS::EC2::Volume
    Properties:
      AvailabilityZone: {'Fn::GetAtt': [Server, AvailabilityZone]}
      Size: 8
  DataAttachment:
    Type: AWS::EC2::VolumeAttachment
    Properties:
      InstanceId: {Ref: Server}
      VolumeId: {Ref: Data}
      Device: /dev/sdh
  Assets:
    Type: AWS::S3::Bucket
    Properties:
      VersioningConfiguration: {Status: Enabled}
  Orders:
    Type: AWS::SQS::Queue
    Properties:
      VisibilityTimeout: {Ref: Visibility}
  Notices:
    Type: AWS::SNS::Topic
    Properties:
      TopicName: {Ref: TopicName}
      Subscription:
        - {Protocol: sqs, Endpoint: {'Fn::GetAtt': [Orders, Arn]}}
Outputs:
  QueueUrl: {Value: {'Fn::GetAtt': [Orders, QueueUrl]}}
  TopicArn: {Value: {Ref: Notices}}
  Bucket: {Value: {Ref: Assets}}
  BucketDomain: {Value: {'Fn::GetAtt': [Assets, DomainName]}}
  ServerIp: {Value: {'Fn::GetAtt': [Server, PrivateIp]}}
  Zone: {Value: {'Fn::GetAtt': [Subnet, AvailabilityZone]}}
"""
